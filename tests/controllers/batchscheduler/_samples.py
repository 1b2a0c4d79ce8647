"""KubeRay's samples as the batch scheduler tests read them."""

from __future__ import annotations

from typing import Any, cast

from rayop.kube.client import KubeClient
from rayop.testing import FakeClient
from tests.kuberay_compat import sample_docs

Obj = dict[str, Any]


def sample(file_name: str, kind: str) -> Obj:
    """The first object of ``kind`` in a KubeRay sample, with a namespace and a uid."""
    obj = next(d for d in sample_docs(file_name) if d.get("kind") == kind)
    obj["metadata"].update(namespace="ns", uid="uid-owner")
    return obj


def client(api: FakeClient) -> KubeClient:
    """The fake as the schedulers' client type."""
    return cast(KubeClient, api)


def pod() -> Obj:
    """An empty pod about to be created."""
    return {"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
