"""RayCluster status computation and change detection.

KubeRay v1.7.0: ``calculateStatus`` in ``ray-operator/controllers/ray/raycluster_controller.go``;
``InconsistentRayClusterStatus`` in ``ray-operator/controllers/ray/utils/consistency.go``.

:func:`calculate_status` is KubeRay's ``calculateStatus`` as a pure function of the parsed
cluster, its current ``status`` wire dict (the starting point, so unknown fields survive), its
pods and head services (all read from the informer cache) and the reconcile error. It returns
the new ``status`` wire dict, with zero counters omitted as Go's ``omitempty`` does.
:func:`status_changed` is ``InconsistentRayClusterStatus``: it decides whether to write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rayop.api import keys
from rayop.api.conditions import is_condition_true, remove_condition, set_condition
from rayop.api.raycluster import MAX_INT32, RayCluster
from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import ZERO, Quantity, sum_resource_lists
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels
from rayop.controllers.raycluster.pod_health import all_pods_running, is_running_and_ready, phase
from rayop.controllers.raycluster.resources import is_gpu_resource, pod_resources
from rayop.runtime.informers.frozen import thaw

HEAD_POD_READY = "HeadPodReady"
PROVISIONED = "RayClusterProvisioned"
REPLICA_FAILURE = "ReplicaFailure"
SUSPENDING = "RayClusterSuspending"
SUSPENDED = "RayClusterSuspended"
READY_STATE = "ready"
SUSPENDED_STATE = "suspended"


class ReplicaFailureError(Exception):
    """A pod create/delete failure that sets the ``ReplicaFailure`` condition with ``reason``.

    Reasons: FailedCreateHeadPod, FailedDeleteHeadPod, FailedCreateWorkerPod,
    FailedDeleteWorkerPod, FailedDeleteAllPods.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StatusUnavailableError(Exception):
    """The status cannot be computed yet (no or several head services, no head service IP,
    several head pods); KubeRay returns this as the reconcile error and writes nothing."""


def replica_failure_reason(error: BaseException | None) -> str | None:
    """Returns the ReplicaFailure reason carried by ``error`` or its causes, else None."""
    seen = 0
    while error is not None and seen < 16:
        if isinstance(error, ReplicaFailureError):
            return error.reason
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def _counters(rc: RayCluster, pods: Sequence[Obj]) -> dict[str, int]:
    workers = [p for p in pods if cs.labels_of(p).get(keys.RAY_NODE_TYPE) == labels.WORKER]
    groups = rc.spec.worker_group_specs or []
    active = [g for g in groups if not g.suspend]
    max_total = sum(g.max_replicas * g.num_of_hosts for g in active)
    return {
        "readyWorkerReplicas": sum(1 for p in workers if is_running_and_ready(p)),
        "availableWorkerReplicas": sum(1 for p in workers if phase(p) == "Running"),
        "desiredWorkerReplicas": sum(cs.desired_worker_pods(g) for g in groups),
        "minWorkerReplicas": sum(g.min_replicas * g.num_of_hosts for g in active),
        "maxWorkerReplicas": min(max_total, MAX_INT32),
    }


def desired_resources(rc: RayCluster) -> dict[str, Quantity]:
    """Returns head pod resources plus ``replicas x numOfHosts`` pods of each unsuspended group."""
    lists = [pod_resources(cs.template_spec(rc.spec.head_group_spec.template))]
    for group in rc.spec.worker_group_specs or ():
        if group.suspend:
            continue
        count = group.replicas * group.num_of_hosts
        lists.append(
            {k: q * count for k, q in pod_resources(cs.template_spec(group.template)).items()}
        )
    return sum_resource_lists(lists)


def _desired_resource_fields(rc: RayCluster) -> dict[str, str]:
    total = desired_resources(rc)
    gpu = ZERO
    for key in sorted(total):
        if is_gpu_resource(key) and not total[key].is_zero():
            gpu = gpu + total[key]
    return {
        "desiredCPU": total.get("cpu", ZERO).canonical(),
        "desiredMemory": total.get("memory", ZERO).canonical(),
        "desiredGPU": gpu.canonical(),
        "desiredTPU": total.get("google.com/tpu", ZERO).canonical(),
    }


def _head_pod(pods: Sequence[Obj]) -> Obj | None:
    heads = [p for p in pods if cs.labels_of(p).get(keys.RAY_NODE_TYPE) == labels.HEAD]
    if len(heads) > 1:
        raise StatusUnavailableError(f"found {len(heads)} head Pods; expected at most one")
    return heads[0] if heads else None


def head_pod_ready_condition(head_pod: Obj) -> dict[str, Any]:
    """Mirrors the head pod's Ready condition as ``HeadPodReady`` (KubeRay's reasons)."""
    result: dict[str, Any] = {
        "type": HEAD_POD_READY,
        "status": "False",
        "reason": "Unknown",
        "message": "",
    }
    for cond in (head_pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") != "Ready":
            continue
        result["status"] = cond.get("status", "False")
        result["message"] = cond.get("message", "") or ""
        reason = cond.get("reason", "") or ""
        if result["status"] == "True" and not reason:
            reason = "HeadPodRunningAndReady"
        if reason:
            result["reason"] = reason
        if reason == "ContainersNotReady":
            _explain_not_ready(head_pod, result)
        break
    return result


def _explain_not_ready(pod: Obj, result: dict[str, Any]) -> None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = status.get("state") or {}
        detail = state.get("waiting") or state.get("terminated")
        if detail is None:
            continue
        text = f"{status.get('name', '')}: {detail.get('message', '')}"
        result["message"] = f"{result['message']}; {text}" if result["message"] else text
        if detail.get("reason"):
            result["reason"] = detail["reason"]
        return


def _suspend_status(conditions: Sequence[Mapping[str, Any]]) -> str:
    for cond in conditions:
        if cond.get("type") in (SUSPENDING, SUSPENDED) and cond.get("status") == "True":
            return str(cond["type"])
    return ""


def _update_conditions(
    rc: RayCluster,
    conditions: list[dict[str, Any]],
    pods: Sequence[Obj],
    head_pod: Obj | None,
    *,
    now: str,
) -> None:
    if head_pod is None:
        new = {
            "type": HEAD_POD_READY,
            "status": "False",
            "reason": "HeadPodNotFound",
            "message": "Head Pod not found",
        }
    else:
        new = head_pod_ready_condition(head_pod)
    set_condition(conditions, new, now=now)
    suspend = _suspend_status(conditions)
    if not is_condition_true(conditions, PROVISIONED) and suspend != SUSPENDED:
        if all_pods_running(list(pods)):
            new = {
                "type": PROVISIONED,
                "status": "True",
                "reason": "AllPodRunningAndReadyFirstTime",
                "message": "All Ray Pods are ready for the first time",
            }
        else:
            new = {
                "type": PROVISIONED,
                "status": "False",
                "reason": "RayClusterPodsProvisioning",
                "message": "RayCluster Pods are being provisioned for first time",
            }
        set_condition(conditions, new, now=now)
    suspend_requested = bool(rc.spec.suspend)
    if suspend == SUSPENDING:
        if not pods:
            set_condition(
                conditions,
                {
                    "type": PROVISIONED,
                    "status": "False",
                    "reason": "RayClusterPodsProvisioning",
                    "message": "RayCluster has been suspended",
                },
                now=now,
            )
            set_condition(conditions, _flag(SUSPENDING, False), now=now)
            set_condition(conditions, _flag(SUSPENDED, True), now=now)
    elif suspend == SUSPENDED:
        if rc.spec.suspend is not None and not suspend_requested:
            set_condition(conditions, _flag(SUSPENDED, False), now=now)
    else:
        set_condition(conditions, _flag(SUSPENDED, False), now=now)
        set_condition(conditions, _flag(SUSPENDING, suspend_requested), now=now)


def _flag(condition_type: str, value: bool) -> dict[str, Any]:
    return {
        "type": condition_type,
        "status": "True" if value else "False",
        "reason": condition_type,
        "message": "",
    }


def _head_service(services: Sequence[Obj], cluster_name: str) -> Obj:
    selector = labels.head_service_list_selector(cluster_name)
    matching = [s for s in services if labels.matches(cs.labels_of(s), selector)]
    if not matching:
        raise StatusUnavailableError(f"unable to find head service. cluster name {cluster_name}")
    if len(matching) > 1:
        raise StatusUnavailableError(f"found multiple head services. cluster name {cluster_name}")
    if not (matching[0].get("spec") or {}).get("clusterIP"):
        raise StatusUnavailableError(f"head service IP is empty. cluster name {cluster_name}")
    return matching[0]


def _endpoints(old: Mapping[str, str], service: Obj) -> dict[str, str]:
    endpoints = dict(old)
    for port in (service.get("spec") or {}).get("ports") or []:
        port_name = port.get("name")
        if not port_name:
            continue
        target = port.get("targetPort")
        if port.get("nodePort"):
            endpoints[port_name] = str(port["nodePort"])
        elif target not in (None, 0, ""):
            endpoints[port_name] = str(target)
        elif port.get("port"):
            endpoints[port_name] = str(
                port["port"]
            )  # an API server that did not default targetPort
    return endpoints


def _head_info(service: Obj, head_pod: Obj | None) -> dict[str, str]:
    pod_status = (head_pod or {}).get("status") or {}
    cluster_ip = str((service.get("spec") or {}).get("clusterIP"))
    info = {
        "podIP": str(pod_status.get("podIP") or ""),
        "podName": str(cs.meta(head_pod or {}).get("name") or ""),
        "serviceIP": str(pod_status.get("podIP") or "") if cluster_ip == "None" else cluster_ip,
        "serviceName": cs.name(service),
    }
    return {k: v for k, v in info.items() if v}


def calculate_status(
    rc: RayCluster,
    old: Mapping[str, Any] | None,
    pods: Sequence[Obj],
    services: Sequence[Obj],
    *,
    now: str,
    reconcile_error: BaseException | None = None,
    status_conditions_gate: bool = True,
) -> dict[str, Any]:
    """Returns the new ``status`` of ``rc``; never blocks.

    Args:
        rc: the RayCluster.
        old: its current ``status`` wire dict (the starting point), None when it has none.
        pods: every pod labelled ``ray.io/cluster=<name>`` in the cluster's namespace.
        services: the namespace's services (head services are picked by label).
        now: the RFC 3339 timestamp for ``lastUpdateTime`` and condition transitions.
        reconcile_error: the error the reconcile steps ended with, if any.
        status_conditions_gate: the ``RayClusterStatusConditions`` feature gate.

    Raises:
        StatusUnavailableError: KubeRay would fail ``calculateStatus`` (see the class).
    """
    old = old or {}
    status: dict[str, Any] = thaw(dict(old))  # a plain deep copy, without deepcopy's dispatch
    conditions: list[dict[str, Any]] = status.get("conditions") or []
    if status_conditions_gate:
        reason = replica_failure_reason(reconcile_error)
        if reconcile_error is None:
            remove_condition(conditions, REPLICA_FAILURE)
        elif reason is not None:
            set_condition(
                conditions,
                {
                    "type": REPLICA_FAILURE,
                    "status": "True",
                    "reason": reason,
                    "message": str(reconcile_error),
                },
                now=now,
            )
    generation = int(rc.metadata.get("generation") or 0)
    counters = _counters(rc, pods)
    for key, value in counters.items():
        if value:
            status[key] = value
        else:
            status.pop(key, None)
    status.update(_desired_resource_fields(rc))
    expected_pods = counters["desiredWorkerReplicas"] + 1
    if reconcile_error is None and len(pods) == expected_pods and all_pods_running(list(pods)):
        status["state"] = READY_STATE
        status.pop("reason", None)
    head_pod = _head_pod(pods)
    if status_conditions_gate:
        _update_conditions(rc, conditions, pods, head_pod, now=now)
    if conditions:
        status["conditions"] = conditions
    if rc.spec.suspend and not pods:
        status["state"] = SUSPENDED_STATE
    service = _head_service(services, rc.name)
    endpoints = _endpoints(old.get("endpoints") or {}, service)
    if endpoints:
        status["endpoints"] = endpoints
    status["head"] = _head_info(service, head_pod)
    status["lastUpdateTime"] = now
    if generation:
        status["observedGeneration"] = generation
    if old.get("state") != status.get("state") and status.get("state"):
        status.setdefault("stateTransitionTimes", {})[status["state"]] = now
    return status


_COMPARED = (
    "state",
    "reason",
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
)


def status_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Tells whether the status must be written (KubeRay's ``InconsistentRayClusterStatus``).

    Compares state, reason, the five replica counters, endpoints, head and conditions; ignores
    ``lastUpdateTime``, ``observedGeneration``, desired resources and ``stateTransitionTimes``.
    A missing map and an empty one are equal (the API server drops empty maps anyway).
    """
    old = old or {}
    for key in _COMPARED:
        if (old.get(key) or None) != (new.get(key) or None):
            return True
    for key in ("endpoints", "head", "conditions"):
        if _drop_empty(old.get(key)) != _drop_empty(new.get(key)):
            return True
    return False


def _drop_empty(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if v not in (None, "", {}, [])} or None
    return value or None
