"""Readiness checks on plain objects: is a pod Running and Ready, is a RayCluster converged.

The checks read objects the caller fetched (from the embedded plane's store or through any API
server), so the same definition of "ready" serves every test tier. They never block.
"""

from __future__ import annotations

from collections.abc import Iterable

from rayop.api.keys import RAY_CLUSTER, RAY_NODE_TYPE
from rayop.apimachinery.objects import ObjView as Obj


def running_and_ready(pod: Obj) -> bool:
    """Tells whether a pod is in phase Running with condition Ready=True."""
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return status.get("phase") == "Running" and ready


def ray_node_pods(pods: Iterable[Obj], cluster: str, *, live_only: bool = True) -> list[Obj]:
    """Returns the head and worker pods of RayCluster ``cluster`` among ``pods``.

    Args:
        pods: Pods of one namespace.
        cluster: The RayCluster's name.
        live_only: Leave out pods being deleted.
    """
    found = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if labels.get(RAY_CLUSTER) != cluster:
            continue
        if labels.get(RAY_NODE_TYPE) not in ("head", "worker"):
            continue
        if live_only and metadata.get("deletionTimestamp"):
            continue
        found.append(pod)
    return found


def raycluster_converged(raycluster: Obj | None, pods: Iterable[Obj]) -> bool:
    """Tells whether a RayCluster is ready as KubeRay reports it, with every pod ready.

    Ready means: state ``ready``; conditions HeadPodReady and RayClusterProvisioned True;
    ``observedGeneration`` current; one head plus ``desiredWorkerReplicas`` live pods, all
    Running and Ready; ``readyWorkerReplicas`` equal to the desired count.

    Args:
        raycluster: The RayCluster (None when it does not exist: not converged).
        pods: Its live head and worker pods (see :func:`ray_node_pods`).
    """
    if raycluster is None:
        return False
    status = raycluster.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    live = list(pods)
    desired = status.get("desiredWorkerReplicas", 0)
    return (
        status.get("state") == "ready"
        and conditions.get("HeadPodReady") == "True"
        and conditions.get("RayClusterProvisioned") == "True"
        and status.get("observedGeneration") == (raycluster.get("metadata") or {}).get("generation")
        and len(live) == desired + 1
        and status.get("readyWorkerReplicas", 0) == desired
        and all(running_and_ready(p) for p in live)
    )
