"""Shared fixtures: KubeRay sample RayClusters from ../shared, as the API server would return them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

SAMPLES = Path(__file__).resolve().parents[4] / "shared" / "compat" / "kuberay-v1.7.0" / "samples"


def load_sample(name: str, *, namespace: str = "default", uid: str = "uid-1") -> dict[str, Any]:
    """Loads a RayCluster sample and adds the metadata the API server would set."""
    if not SAMPLES.is_dir():
        pytest.skip(f"KubeRay samples not found at {SAMPLES} (the ../shared checkout is missing)")
    docs = [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d]
    cluster: dict[str, Any] = next(d for d in docs if d.get("kind") == "RayCluster")
    cluster["metadata"].update({"namespace": namespace, "uid": uid, "generation": 1})
    return cluster


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """Returns a container's env as name -> value (or valueFrom)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def minimal_cluster(**spec: Any) -> dict[str, Any]:
    """Returns a small hand-written RayCluster with one worker group."""
    base: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "u-1", "generation": 3},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2"}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "replicas": 2,
                    "minReplicas": 0,
                    "maxReplicas": 5,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w", "image": "ray:2"}]}},
                }
            ],
        },
    }
    base["spec"].update(spec)
    return base
