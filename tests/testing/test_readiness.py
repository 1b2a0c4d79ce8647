"""The readiness checks: which pods belong to a RayCluster, when a RayCluster is converged."""

from __future__ import annotations

from typing import Any

from rayop.testing import ray_node_pods, raycluster_converged, running_and_ready


def pod(name: str, node_type: str, *, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {"ray.io/cluster": "rc", "ray.io/node-type": node_type},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"metadata": metadata, "status": {"phase": "Running", "conditions": [condition]}}


def raycluster(**status: Any) -> dict[str, Any]:
    conditions = [
        {"type": "HeadPodReady", "status": "True"},
        {"type": "RayClusterProvisioned", "status": "True"},
    ]
    base = {
        "state": "ready",
        "conditions": conditions,
        "observedGeneration": 2,
        "desiredWorkerReplicas": 1,
        "readyWorkerReplicas": 1,
    }
    return {"metadata": {"name": "rc", "generation": 2}, "status": {**base, **status}}


def test_node_pods_are_heads_and_workers_of_the_cluster_not_being_deleted() -> None:
    pods = [
        pod("head", "head"),
        pod("worker", "worker"),
        pod("gone", "worker", deleting=True),
        pod("cleanup", "redis-cleanup"),
        {
            **pod("other", "worker"),
            "metadata": {"name": "other", "labels": {"ray.io/cluster": "x"}},
        },
    ]
    assert [p["metadata"]["name"] for p in ray_node_pods(pods, "rc")] == ["head", "worker"]
    assert len(ray_node_pods(pods, "rc", live_only=False)) == 3


def test_converged_needs_status_conditions_generation_and_every_pod_ready() -> None:
    pods = [pod("head", "head"), pod("worker", "worker")]
    assert raycluster_converged(raycluster(), pods)
    assert not raycluster_converged(None, pods)
    assert not raycluster_converged(raycluster(state="suspended"), pods)
    assert not raycluster_converged(raycluster(observedGeneration=1), pods)
    assert not raycluster_converged(raycluster(readyWorkerReplicas=0), pods)
    assert not raycluster_converged(raycluster(), pods[:1])
    assert not raycluster_converged(raycluster(), [pods[0], pod("worker", "worker", ready=False)])
    assert running_and_ready(pods[0]) and not running_and_ready({"status": {"phase": "Running"}})
