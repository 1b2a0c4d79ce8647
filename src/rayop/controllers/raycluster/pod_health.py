"""Pod health as KubeRay judges it: which pods to delete, which count as ready.

KubeRay v1.7.0: ``shouldDeletePod`` in ``ray-operator/controllers/ray/raycluster_controller.go``;
``IsRunningAndReady`` and ``CalculateAvailableReplicas`` in
``ray-operator/controllers/ray/utils/util.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj


def phase(pod: Obj) -> str:
    """Returns ``status.phase`` ("" when the pod has no status yet)."""
    return str((pod.get("status") or {}).get("phase") or "")


def pod_condition(pod: Obj, condition_type: str) -> Mapping[str, Any] | None:
    """Returns the pod condition of the given type, or None."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == condition_type:
            return cond  # type: ignore[no-any-return]
    return None


def is_running_and_ready(pod: Obj) -> bool:
    """Tells whether the pod is Running with condition Ready=True."""
    if phase(pod) != "Running":
        return False
    ready = pod_condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def all_pods_running(pods: list[Obj]) -> bool:
    """KubeRay's ``CheckAllPodsRunning``: non-empty, all Running, none with Ready != True.

    A Running pod without a Ready condition counts as running, as in KubeRay.
    """
    if not pods:
        return False
    for pod in pods:
        if phase(pod) != "Running":
            return False
        ready = pod_condition(pod, "Ready")
        if ready is not None and ready.get("status") != "True":
            return False
    return True


def ray_container_terminated(pod: Obj) -> Mapping[str, Any] | None:
    """Returns the Ray container's ``state.terminated`` (found by name), or None."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    ray_name = containers[0].get("name")
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == ray_name:
            return (status.get("state") or {}).get("terminated")
    return None


def should_delete_pod(pod: Obj, node_type: str) -> tuple[bool, str]:
    """Decides whether KubeRay deletes a pod as unhealthy, with its reason text.

    Deleted: phase Failed or Succeeded; or Running with the Ray container terminated and
    ``restartPolicy: Never``. A terminated container that can restart is left alone.
    """
    pod_name = (pod.get("metadata") or {}).get("name", "")
    pod_phase = phase(pod)
    if pod_phase in ("Failed", "Succeeded"):
        return True, (
            f"The {node_type} Pod {pod_name} status is {pod_phase} which is a terminal state. "
            "KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."
        )
    terminated = ray_container_terminated(pod)
    restart_policy = (pod.get("spec") or {}).get("restartPolicy") or ""
    if pod_phase == "Running" and terminated is not None:
        if restart_policy == "Never":
            return True, (
                f"The Pod status of the {node_type} Pod {pod_name} is {pod_phase}, and the Ray "
                f"container terminated status is {dict(terminated)}. The container is unable to "
                f"restart due to its restart policy {restart_policy}, so KubeRay will delete it."
            )
        return False, (
            f"The Pod status of the {node_type} Pod {pod_name} is {pod_phase}, and the Ray container "
            f"terminated status is {dict(terminated)}. However, KubeRay will not delete the Pod because "
            f"its restartPolicy is set to {restart_policy} and it should be able to restart automatically."
        )
    return False, (
        f"KubeRay does not need to delete the {node_type} Pod {pod_name}. The Pod status is "
        f"{pod_phase}, and the Ray container terminated status is {terminated}."
    )
