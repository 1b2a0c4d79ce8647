"""KubeRay's samples as the batch scheduler tests read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml

from rayop.kube.client import KubeClient
from rayop.testing import FakeClient

SAMPLES = Path(__file__).resolve().parents[4] / "shared" / "compat" / "kuberay-v1.7.0" / "samples"
Obj = dict[str, Any]


def sample(file_name: str, kind: str) -> Obj:
    """The first object of ``kind`` in a KubeRay sample, with a namespace and a uid."""
    with (SAMPLES / file_name).open() as f:
        obj = next(d for d in yaml.safe_load_all(f) if d and d.get("kind") == kind)
    obj["metadata"].update(namespace="ns", uid="uid-owner")
    return cast(Obj, obj)


def client(api: FakeClient) -> KubeClient:
    """The fake as the schedulers' client type."""
    return cast(KubeClient, api)


def pod() -> Obj:
    """An empty pod about to be created."""
    return {"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
