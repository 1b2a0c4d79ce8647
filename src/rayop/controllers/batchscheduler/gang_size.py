"""How big a Ray cluster's gang is: KubeRay's replica and resource arithmetic on wire specs.

Every function reads a RayCluster spec as wire JSON (a RayCluster's ``spec``, a RayJob's
``spec.rayClusterSpec``), with the CRD's defaults for what is missing (``replicas`` and
``minReplicas`` 0, ``maxReplicas`` 2147483647, ``numOfHosts`` 1). The rules are those of
KubeRay v1.7's ``utils`` package:

- desired workers of a group: ``replicas`` clamped to ``[minReplicas, maxReplicas]`` times
  ``numOfHosts``, 0 for a suspended group;
- desired resources: the head pod plus each unsuspended group's pod times ``replicas`` (not
  clamped) times ``numOfHosts``; min resources the same with ``minReplicas``;
- a pod's resources: the sum over its containers (not init containers) of each container's
  requests, a limit standing in for a missing request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import (
    ResourceList,
    container_requests,
    scale_resource_list,
    sum_resource_lists,
)

__all__ = [
    "MAX_INT32",
    "autoscaling_enabled",
    "desired_replicas",
    "desired_resources",
    "gang_params",
    "group_desired_replicas",
    "min_replicas",
    "min_resources",
    "pod_resources",
    "worker_groups",
]

MAX_INT32 = 2**31 - 1


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _int(group: Obj, key: str, default: int) -> int:
    value = group.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def worker_groups(spec: Obj) -> Sequence[Obj]:
    """Returns the spec's worker groups (empty when there are none)."""
    groups = spec.get("workerGroupSpecs")
    return [_mapping(g) for g in groups] if isinstance(groups, list) else []


def _suspended(group: Obj) -> bool:
    return group.get("suspend") is True


def autoscaling_enabled(spec: Obj) -> bool:
    """Tells whether ``enableInTreeAutoscaling`` is true."""
    return spec.get("enableInTreeAutoscaling") is True


def pod_resources(pod_spec: Obj) -> ResourceList:
    """Sums a pod spec's container resources, requests first, limits for missing requests."""
    containers = pod_spec.get("containers") or ()
    return sum_resource_lists(container_requests(_mapping(c)) for c in containers)


def _template_spec(group: Obj) -> Obj:
    return _mapping(_mapping(group.get("template")).get("spec"))


def group_desired_replicas(group: Obj) -> int:
    """Returns a worker group's desired pods (KubeRay's ``GetWorkerGroupDesiredReplicas``)."""
    if _suspended(group):
        return 0
    low = _int(group, "minReplicas", 0)
    high = _int(group, "maxReplicas", MAX_INT32)
    replicas = group.get("replicas")
    if not isinstance(replicas, int) or replicas < low:
        count = low
    elif replicas > high:
        count = high
    else:
        count = replicas
    return count * _int(group, "numOfHosts", 1)


def desired_replicas(spec: Obj) -> int:
    """Returns the desired worker pods of the whole cluster."""
    return sum(group_desired_replicas(g) for g in worker_groups(spec))


def min_replicas(spec: Obj) -> int:
    """Returns the minimum worker pods of the unsuspended groups."""
    return sum(
        _int(g, "minReplicas", 0) * _int(g, "numOfHosts", 1)
        for g in worker_groups(spec)
        if not _suspended(g)
    )


def _cluster_resources(spec: Obj, replicas_key: str) -> ResourceList:
    head = pod_resources(_template_spec(_mapping(spec.get("headGroupSpec"))))
    lists = [head]
    for group in worker_groups(spec):
        if _suspended(group):
            continue
        pods = _int(group, replicas_key, 0) * _int(group, "numOfHosts", 1)
        lists.append(scale_resource_list(pod_resources(_template_spec(group)), pods))
    return sum_resource_lists(lists)


def desired_resources(spec: Obj) -> ResourceList:
    """Returns the head's resources plus every unsuspended group's at ``replicas``."""
    return _cluster_resources(spec, "replicas")


def min_resources(spec: Obj) -> ResourceList:
    """Returns the head's resources plus every unsuspended group's at ``minReplicas``."""
    return _cluster_resources(spec, "minReplicas")


def gang_params(spec: Obj) -> tuple[int, ResourceList]:
    """Returns Volcano's (min member, min resources): head + desired workers and their
    resources, or head + minimum workers when autoscaling is on."""
    if autoscaling_enabled(spec):
        return min_replicas(spec) + 1, min_resources(spec)
    return desired_replicas(spec) + 1, desired_resources(spec)
