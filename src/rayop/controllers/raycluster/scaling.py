"""Which pods a reconcile pass creates and deletes, per group.

KubeRay v1.7.0: ``reconcilePods`` in ``ray-operator/controllers/ray/raycluster_controller.go``.

The decisions are pure: given the RayCluster (the cached wire dict for the head, whose plan reads
only status and annotations; the parsed model for a worker group), the group and its pods as
listed from the cache, :func:`plan_head` and :func:`plan_worker_group` return a plan. The reconciler executes a plan in
order — deletions, then creations — records a scale expectation for each successful call, and
raises :attr:`GroupPlan.error` (if set) once the plan's calls succeeded, as KubeRay returns an
error there to requeue with backoff. Checking expectations and the suspend steps stay with the
reconciler, which skips a group whose expectations are unsatisfied.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from rayop.api import keys
from rayop.api.conditions import is_condition_true, object_conditions
from rayop.api.raycluster import RayCluster, WorkerGroupSpec
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names
from rayop.controllers.raycluster.pod_health import should_delete_pod


@dataclass(frozen=True)
class PodDeletion:
    """Delete one pod; ``ignore_not_found`` says a NotFound answer is not an error."""

    name: str
    reason: str
    ignore_not_found: bool = True
    expect_on_not_found: bool = False
    """KubeRay's single-host scale-down records a delete expectation even after NotFound."""


@dataclass(frozen=True)
class PodCreation:
    """Create one worker pod with these index labels (see ``pods.build_worker_pod``)."""

    replica_index: int = 0
    replica_name: str = ""
    host_index: int = 0


@dataclass(frozen=True)
class GroupPlan:
    """What one pass does to a worker group: deletions, then creations, then maybe an error."""

    group: str
    deletions: tuple[PodDeletion, ...] = ()
    creations: tuple[PodCreation, ...] = ()
    error: str | None = None
    delete_all: bool = False
    """The group is suspended: delete all its pods (``DeleteAllOf``) and skip the rest."""
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class HeadPlan:
    """What one pass does to the head: ``create``, ``delete`` (then error), or nothing."""

    action: str  # "none" | "create" | "delete" | "skip-restart" | "error"
    pod_name: str = ""
    reason: str = ""


def _pod_name(pod: Obj) -> str:
    return str(cs.meta(pod).get("name", ""))


def plan_head(cached: Obj, head_pods: Sequence[Obj]) -> HeadPlan:
    """Decides the head pod's fate from the cached RayCluster's status and annotations.

    Expectations must already be satisfied for the head group.
    """
    if len(head_pods) > 1:
        found = [_pod_name(p) for p in head_pods]
        return HeadPlan(
            "error", reason=f"{len(found)} head pods found {found}. Please delete extra head pods"
        )
    if len(head_pods) == 1:
        delete, reason = should_delete_pod(head_pods[0], labels.HEAD)
        return HeadPlan("delete" if delete else "none", _pod_name(head_pods[0]), reason)
    provisioned = is_condition_true(object_conditions(cached), "RayClusterProvisioned")
    if (
        provisioned
        and cs.annotations_of(cached).get(keys.DISABLE_PROVISIONED_HEAD_RESTART) == "true"
    ):
        return HeadPlan("skip-restart")
    return HeadPlan("create")


def _index(pod: Obj) -> int | None:
    try:
        return int(cs.labels_of(pod)[keys.RAY_WORKER_REPLICA_INDEX])
    except (KeyError, ValueError):
        return None


def _free_indices(used: set[int], count: int) -> list[int]:
    result, candidate = [], 0
    for _ in range(count):
        while candidate in used:
            candidate += 1
        used.add(candidate)
        result.append(candidate)
    return result


def _may_scale_down(rc: RayCluster, options: OperatorOptions) -> bool:
    return not rc.spec.enable_in_tree_autoscaling or options.enable_random_pod_delete


def _workers_to_delete(group: WorkerGroupSpec) -> list[str]:
    strategy = group.scale_strategy
    return list(dict.fromkeys(strategy.workers_to_delete or ())) if strategy is not None else []


def plan_worker_group(
    rc: RayCluster,
    group: WorkerGroupSpec,
    pods: Sequence[Obj],
    *,
    options: OperatorOptions,
    rng: random.Random | None = None,
) -> GroupPlan:
    """Plans one worker group's pass from the group's listed pods (terminating ones included).

    Args:
        rc: the RayCluster.
        group: the ``workerGroupSpecs`` entry.
        pods: the group's pods from the cache (``ray.io/cluster`` + ``ray.io/group``), list order.
        options: operator settings (random pod delete, multi-host indexing gate).
        rng: source of multi-host replica name suffixes (tests pass a seeded one).
    """
    group_name = group.group_name
    if group.suspend:
        return GroupPlan(group_name, delete_all=True)
    if group.num_of_hosts > 1 and options.feature_gates.ray_multi_host_indexing:
        return _plan_multi_host(rc, group, pods, options=options, rng=rng or random.Random())
    unhealthy = []
    for pod in pods:
        delete, reason = should_delete_pod(pod, labels.WORKER)
        if delete:
            unhealthy.append(PodDeletion(_pod_name(pod), reason, ignore_not_found=False))
    if unhealthy:
        return GroupPlan(
            group_name, tuple(unhealthy), error=f"delete {len(unhealthy)} unhealthy worker Pods"
        )
    to_delete = _workers_to_delete(group)
    deletions = [PodDeletion(n, "workersToDelete") for n in to_delete]
    remaining = [p for p in pods if _pod_name(p) not in set(to_delete)]
    diff = cs.desired_worker_pods(group) - len(remaining)
    if diff > 0:
        if options.feature_gates.ray_multi_host_indexing:
            used = {i for i in map(_index, remaining) if i is not None}
            creations = tuple(PodCreation(replica_index=i) for i in _free_indices(used, diff))
        else:
            creations = tuple(PodCreation() for _ in range(diff))
        return GroupPlan(group_name, tuple(deletions), creations)
    if diff < 0 and _may_scale_down(rc, options):
        deletions += [
            PodDeletion(_pod_name(p), "scale down", expect_on_not_found=True)
            for p in remaining[:-diff]
        ]
    return GroupPlan(group_name, tuple(deletions))


def _plan_multi_host(
    rc: RayCluster,
    group: WorkerGroupSpec,
    pods: Sequence[Obj],
    *,
    options: OperatorOptions,
    rng: random.Random,
) -> GroupPlan:
    group_name = group.group_name
    hosts = group.num_of_hosts
    replicas: dict[str, list[Obj]] = {}
    for pod in pods:
        replica = cs.labels_of(pod).get(keys.RAY_WORKER_REPLICA_NAME)
        if replica is not None:
            replicas.setdefault(replica, []).append(pod)
    deleted: set[str] = set()
    deletions: list[PodDeletion] = []
    # An incomplete replica (a host pod deleted from outside) loses its other hosts, and its
    # replacement is created in this same pass below, under a fresh replica name, so the two
    # never mix. KubeRay returns an error here and creates it on a later pass, once the old
    # hosts are gone; on a fast cluster the group was short of a replica for a visible moment.
    for members in (m for _, m in sorted(replicas.items()) if len(m) < hosts):
        for member in members:
            deletions.append(
                PodDeletion(_pod_name(member), "cleanup of incomplete multi-host group")
            )
            deleted.add(_pod_name(member))
    for pod in pods:
        if _pod_name(pod) in deleted:
            continue
        delete, reason = should_delete_pod(pod, labels.WORKER)
        replica = cs.labels_of(pod).get(keys.RAY_WORKER_REPLICA_NAME)
        if delete and replica in replicas:
            for member in replicas[replica]:
                deletions.append(PodDeletion(_pod_name(member), reason))
                deleted.add(_pod_name(member))
    requested = set(_workers_to_delete(group))
    doomed = sorted(
        {
            cs.labels_of(p).get(keys.RAY_WORKER_REPLICA_NAME, "")
            for p in pods
            if _pod_name(p) in requested
        }
    )
    if doomed:
        for replica in doomed:
            for member in replicas.get(replica, []):
                if _pod_name(member) not in deleted:
                    deletions.append(
                        PodDeletion(_pod_name(member), "autoscaler scale-down request")
                    )
        count = sum(len(replicas.get(r, [])) for r in doomed)
        return GroupPlan(
            group_name,
            tuple(deletions),
            error=f"deleted {count} worker Pods based on ScaleStrategy, requeueing",
        )
    valid = {r: m for r, m in replicas.items() if not any(_pod_name(p) in deleted for p in m)}
    desired = cs.desired_worker_pods(group)
    if desired % hosts:
        return GroupPlan(
            group_name,
            tuple(deletions),
            error=(
                f"desired worker pods ({desired}) is not a multiple of NumOfHosts ({hosts}) for group {group_name}"
            ),
        )
    to_create = desired // hosts - len(valid)
    if to_create > 0:
        used = {i for i in (_index(m[0]) for m in valid.values()) if i is not None}
        creations = []
        for index in _free_indices(used, to_create):
            replica_name = names.replica_group_name(group_name, rng)
            creations += [PodCreation(index, replica_name, host) for host in range(hosts)]
        return GroupPlan(group_name, tuple(deletions), tuple(creations))
    if to_create < 0 and _may_scale_down(rc, options):
        # KubeRay picks replicas in Go map order; rayop removes the highest indices first.
        victims = sorted(valid, key=lambda r: (_index(valid[r][0]) or 0, r), reverse=True)[
            :-to_create
        ]
        for replica in victims:
            deletions += [PodDeletion(_pod_name(p), "scaling down") for p in valid[replica]]
    return GroupPlan(group_name, tuple(deletions))
