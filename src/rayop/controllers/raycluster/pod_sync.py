"""The pods step of a RayCluster reconcile: suspend, Recreate upgrade, head, worker groups.

KubeRay's ``reconcilePods`` (``ray-operator/controllers/ray/raycluster_controller.go``, v1.7.0) with
its scale expectations (``ray-operator/controllers/ray/expectations/scale_expectations.go``): the
head group (key ``""``) and each worker group are skipped while their expectations are unsatisfied;
every successful create or delete records an expectation with the pod's real name. Beyond KubeRay, a
group's creations (and deletions) run concurrently, at most ``deps.pod_call_concurrency`` calls in
flight; each success records its expectation as soon as it returns, a failure never rolls back a
sibling that succeeded, and the failure is raised as a :class:`ReplicaFailureError` once every call
has finished.

In a namespace whose last pod create was answered 403 Forbidden (it is being terminated, a quota
is exhausted, a policy refuses pods: ``deps.refusing_namespaces``), a group's creations go one
at a time and stop at the first failure, KubeRay's own order, until a pod create there
succeeds: otherwise every pass of every cluster in a terminating namespace would send all its
missing pods (to be refused) where KubeRay sends one. A live namespace never answers 403, so
what users see there is unchanged.

A group with more than ``group_creates.background_threshold`` creations (in a namespace that
does not refuse pods) has them made by a background creator (``deps.group_creates``), so that
the pass ends at once; the next pass raises that creator's failure where the in-pass create
would have. The cluster's creators are stopped (cancelled and awaited) before a suspend or a
Recreate upgrade deletes its pods (:func:`stop_group_creates`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from rayop.api import keys
from rayop.api.conditions import is_condition_true, object_conditions
from rayop.api.raycluster import UpgradeStrategyType, WorkerGroupSpec
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.batchscheduler import registry as batch
from rayop.controllers.batchscheduler.interface import RAY_CLUSTER
from rayop.controllers.config.options import KUBERAY_VERSION
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels
from rayop.controllers.kit.names import HEAD_GROUP_LABEL_VALUE
from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster.context import PassContext, ReconcilerDeps
from rayop.controllers.raycluster.group_creates import background_threshold
from rayop.controllers.raycluster.mtls.names import is_tls_enabled
from rayop.controllers.raycluster.mtls.readiness import MTLSNotReadyError, check_mtls_secrets_ready
from rayop.controllers.raycluster.pods import build_head_pod, build_worker_pod, with_replica_index
from rayop.controllers.raycluster.scaling import (
    PodCreation,
    PodDeletion,
    plan_head,
    plan_worker_group,
)
from rayop.controllers.raycluster.status import SUSPENDED, SUSPENDING, ReplicaFailureError
from rayop.kube.errors import Conflict, Forbidden, NotFound
from rayop.kube.resources import PODS
from rayop.runtime.decisions import note_wait
from rayop.runtime.expectations import CREATE, DELETE, HEAD_GROUP
from rayop.runtime.steps import Stop

T = TypeVar("T")


class RequeueError(Exception):
    """KubeRay returns an error to be requeued with backoff (not a ReplicaFailure)."""


async def run_bounded(
    calls: Sequence[Callable[[], Awaitable[T]]], limit: int
) -> list[T | BaseException]:
    """Runs every call with at most ``limit`` in flight; blocks until all finished.

    Returns each call's result or the exception it raised, in call order. A failure does not
    cancel the others.
    """
    semaphore = asyncio.Semaphore(max(1, limit))

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await call()

    return await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)


async def _run_until_failure(
    calls: Sequence[Callable[[], Awaitable[T]]],
) -> list[T | BaseException]:
    """Runs the calls one after the other up to the first that raises an ``Exception``; returns
    the results so far, that exception last (the calls after it are not run)."""
    results: list[T | BaseException] = []
    for call in calls:
        try:
            results.append(await call())
        except Exception as err:
            results.append(err)
            break
    return results


def _first_error(results: Sequence[object]) -> tuple[int, BaseException | None]:
    failures = [r for r in results if isinstance(r, BaseException)]
    for failure in failures:
        if not isinstance(failure, Exception):
            raise failure  # cancellation and friends propagate
    return len(failures), (failures[0] if failures else None)


# -- deletion ---------------------------------------------------------------------------------


def expectation_group(pod: Obj) -> str:
    """Returns the expectations group of a pod: ``""`` for the head, else its ``ray.io/group``."""
    pod_labels = cs.labels_of(pod)
    if pod_labels.get(keys.RAY_NODE_TYPE) == labels.HEAD:
        return HEAD_GROUP
    return str(pod_labels.get(keys.RAY_GROUP, ""))


async def _delete_pod(ctx: PassContext, pod: Obj, deletion: PodDeletion) -> bool:
    """Deletes one cached pod (by uid precondition); returns whether it was deleted by this call."""
    name = cs.name(pod)
    group = expectation_group(pod)
    head = group == HEAD_GROUP
    uid = str(cs.meta(pod).get("uid") or "")
    where = f"{ctx.namespace}/{name}"
    try:
        await write_with_events(
            ctx,
            ctx.deps.client.delete(
                PODS, name, namespace=ctx.namespace, preconditions={"uid": uid} if uid else None
            ),
            action=ev.ACTION_DELETE,
            done=(
                ev.DELETED_HEAD_POD if head else ev.DELETED_WORKER_POD,
                f"Deleted Pod {where}; reason: {deletion.reason}",
            ),
            failed=(
                ev.FAILED_TO_DELETE_HEAD_POD if head else ev.FAILED_TO_DELETE_WORKER_POD,
                f"Failed to delete Pod {where}: ",
            ),
            passing=(NotFound, Conflict),
        )
    except (NotFound, Conflict):
        # Conflict: the uid precondition failed, so the pod we meant is gone already.
        if deletion.expect_on_not_found:
            ctx.deps.expectations.expect_scale_pod(ctx.namespace, ctx.name, group, name, DELETE)
        if deletion.ignore_not_found:
            return False
        raise
    ctx.deps.expectations.expect_scale_pod(ctx.namespace, ctx.name, group, name, DELETE)
    return True


async def delete_pods(
    ctx: PassContext,
    pods: Sequence[Obj],
    deletions: Sequence[PodDeletion],
    *,
    group: str,
    failure_reason: str,
) -> int:
    """Deletes the named pods concurrently (names not among ``pods`` are skipped).

    Returns:
        How many pods this pass deleted.

    Raises:
        ReplicaFailureError: some delete failed (after every call finished).
    """
    by_name = {cs.name(p): p for p in pods}
    todo = [
        (by_name[d.name], d)
        for d in dict((d.name, d) for d in deletions).values()
        if d.name in by_name
    ]

    def call(pod: Obj, deletion: PodDeletion) -> Callable[[], Awaitable[bool]]:
        return lambda: _delete_pod(ctx, pod, deletion)

    results = await run_bounded([call(p, d) for p, d in todo], ctx.deps.pod_call_concurrency)
    failed, error = _first_error(results)
    if error is not None:
        raise ReplicaFailureError(
            failure_reason,
            f"failed to delete {failed} of {len(todo)} Pods of group {group!r}: {error}",
        ) from error
    return sum(1 for r in results if r is True)


async def delete_all_pods(
    ctx: PassContext, pods: Sequence[Obj], *, group: str, reason: str
) -> None:
    """Deletes every given pod not already terminating (suspend); KubeRay's ``DeleteAllOf``
    limited to the pods this operator owns."""
    pods = [p for p in pods if not cs.meta(p).get("deletionTimestamp")]
    deletions = [PodDeletion(cs.name(p), reason) for p in pods]
    await delete_pods(ctx, pods, deletions, group=group, failure_reason="FailedDeleteAllPods")


# -- creation ---------------------------------------------------------------------------------


async def _create_pod(ctx: PassContext, pod: dict[str, Any], *, group: str) -> str:
    """Creates one head (``group`` ``""``) or worker pod, records its expectation under the name
    the server gave it, and returns that name; a failure is reported and raised."""
    head = group == HEAD_GROUP
    node = "head" if head else "worker"
    refusing = ctx.deps.refusing_namespaces
    try:
        created = await ctx.deps.client.create(PODS, pod, namespace=ctx.namespace)
    except Exception as err:
        if isinstance(err, Forbidden):
            refusing.add(ctx.namespace)
        failed = ev.FAILED_TO_CREATE_HEAD_POD if head else ev.FAILED_TO_CREATE_WORKER_POD
        where = "" if head else f" for group {group}"
        ctx.event(
            "Warning", failed, f"Failed to create {node} Pod{where}: {err}", action=ev.ACTION_CREATE
        )
        raise
    refusing.discard(ctx.namespace)
    name = cs.name(created)
    ctx.deps.expectations.expect_scale_pod(ctx.namespace, ctx.name, group, name, CREATE)
    reason = ev.CREATED_HEAD_POD if head else ev.CREATED_WORKER_POD
    ctx.event(
        "Normal", reason, f"Created {node} Pod {ctx.namespace}/{name}", action=ev.ACTION_CREATE
    )
    return name


async def _create_head(ctx: PassContext) -> None:
    pod = build_head_pod(ctx.rc, options=ctx.deps.options, spec_hash=ctx.spec_hash())
    batch.add_metadata(ctx.deps.options, RAY_CLUSTER, ctx.cached, pod, HEAD_GROUP_LABEL_VALUE)
    try:
        await _create_pod(ctx, pod, group=HEAD_GROUP)
    except Exception as err:
        raise ReplicaFailureError(
            "FailedCreateHeadPod", f"failed to create head Pod: {err}"
        ) from err


def _worker_pod(ctx: PassContext, group: WorkerGroupSpec, creation: PodCreation) -> dict[str, Any]:
    pod = build_worker_pod(
        ctx.rc,
        group,
        options=ctx.deps.options,
        replica_index=creation.replica_index,
        replica_name=creation.replica_name,
        host_index=creation.host_index,
    )
    batch.add_metadata(ctx.deps.options, RAY_CLUSTER, ctx.cached, pod, group.group_name)
    return pod


async def create_workers(
    ctx: PassContext, group: WorkerGroupSpec, creations: Sequence[PodCreation]
) -> list[str]:
    """Creates a group's pods concurrently (one at a time, up to the first failure, in a
    namespace that refused the last pod create); returns the created names.

    Raises:
        ReplicaFailureError: some create failed (after every call finished; created pods stay).
    """

    # A group's new pods differ only in their index labels (the server names each from
    # generateName): the body is built once per multi-host replica and host, and a create
    # with another replica index sends a copy that differs in that label alone.
    bodies: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}

    def body(creation: PodCreation) -> dict[str, Any]:
        key = (creation.replica_name, creation.host_index)
        built = bodies.get(key)
        if built is None:
            pod = _worker_pod(ctx, group, creation)
            bodies[key] = (creation.replica_index, pod)
            return pod
        index, pod = built
        return (
            pod
            if index == creation.replica_index
            else with_replica_index(pod, creation.replica_index)
        )

    def call(creation: PodCreation) -> Callable[[], Awaitable[str]]:
        return lambda: _create_pod(ctx, body(creation), group=group.group_name)

    if ctx.namespace in ctx.deps.refusing_namespaces:
        results = await _run_until_failure([call(c) for c in creations])
    else:
        results = await run_bounded([call(c) for c in creations], ctx.deps.pod_call_concurrency)
    failed, error = _first_error(results)
    if error is not None:
        raise ReplicaFailureError(
            "FailedCreateWorkerPod",
            f"failed to create {failed} of {len(creations)} worker Pods of group "
            f"{group.group_name!r}: {error}",
        ) from error
    return [r for r in results if isinstance(r, str)]


def _create_in_background(
    ctx: PassContext, group: WorkerGroupSpec, creations: Sequence[PodCreation]
) -> bool:
    """Hands a big group's creations to its background creator; returns whether it did."""
    creates = ctx.deps.group_creates
    if (
        creates is None
        or len(creations) <= background_threshold(ctx.deps.pod_call_concurrency)
        or ctx.namespace in ctx.deps.refusing_namespaces
    ):
        return False
    todo = list(creations)

    async def create() -> None:
        await create_workers(ctx, group, todo)

    # The group is unsatisfied while its creator runs, so no pass gets here meanwhile; should
    # one, it leaves the creates to the running creator.
    if creates.start(ctx.namespace, ctx.name, group.group_name, len(todo), create):
        note_wait(
            f"group {group.group_name!r}: {len(todo)} pod creates handed to its background "
            "creator; the cluster is enqueued when it ends"
        )
    return True


async def stop_group_creates(deps: ReconcilerDeps, namespace: str, name: str) -> None:
    """Cancels the cluster's background creators and waits until they ended."""
    if deps.group_creates is not None:
        await deps.group_creates.stop(namespace, name)


async def forget_cluster(deps: ReconcilerDeps, namespace: str, name: str) -> None:
    """Drops what the controller remembers of a cluster: stops its background creators, then
    drops its scale expectations (pending creates included)."""
    await stop_group_creates(deps, namespace, name)
    deps.expectations.delete(namespace, name)


# -- the step ---------------------------------------------------------------------------------


async def _suspend(ctx: PassContext) -> bool:
    """Handles suspend; returns True when the pods step must stop here."""
    suspend = bool(ctx.rc.spec.suspend)
    if ctx.deps.options.feature_gates.ray_cluster_status_conditions:
        conditions = object_conditions(ctx.cached)
        if is_condition_true(conditions, SUSPENDING):
            await stop_group_creates(ctx.deps, ctx.namespace, ctx.name)
            await delete_all_pods(ctx, ctx.cluster_pods(), group=HEAD_GROUP, reason="suspending")
            return True
        return is_condition_true(conditions, SUSPENDED) or suspend
    if suspend:
        await stop_group_creates(ctx.deps, ctx.namespace, ctx.name)
        await delete_all_pods(ctx, ctx.cluster_pods(), group=HEAD_GROUP, reason="suspend")
        return True
    return False


async def _recreate_upgrade(ctx: PassContext) -> bool:
    """Handles ``upgradeStrategy.type: Recreate``; returns True when the pods step must stop.

    As KubeRay: a head pod of another KubeRay version gets this version's hash and version
    annotations instead of a restart; a head pod without a hash (or without both
    annotations) is never restarted.
    """
    strategy = ctx.rc.spec.upgrade_strategy
    heads = ctx.head_pods()
    if strategy is None or strategy.type != UpgradeStrategyType.RECREATE or not heads:
        return False
    head = heads[0]
    annotations = cs.annotations_of(head)
    version = annotations.get(keys.KUBERAY_VERSION) or ""
    if version and version != KUBERAY_VERSION:
        patch: dict[str, Any] = {
            "metadata": {
                "annotations": {
                    keys.KUBERAY_VERSION: KUBERAY_VERSION,
                    keys.UPGRADE_STRATEGY_RECREATE_HASH: ctx.spec_hash(),
                }
            }
        }
        await ctx.deps.client.patch(PODS, cs.name(head), patch, namespace=ctx.namespace)
        return False
    stored_hash = annotations.get(keys.UPGRADE_STRATEGY_RECREATE_HASH) or ""
    if not stored_hash or stored_hash == ctx.spec_hash():
        return False
    await stop_group_creates(ctx.deps, ctx.namespace, ctx.name)
    await delete_all_pods(ctx, ctx.cluster_pods(), group=HEAD_GROUP, reason="Recreate upgrade")
    ctx.deps.expectations.delete(ctx.namespace, ctx.name)
    return True


async def _wait_for_mtls(ctx: PassContext) -> None:
    """Fails the pass (requeued with backoff) while the mTLS secrets are not issued."""
    if not is_tls_enabled(ctx.rc, ctx.deps.options.feature_gates):
        return
    try:
        await check_mtls_secrets_ready(ctx.deps.client, ctx.namespace, ctx.name)
    except MTLSNotReadyError as err:
        note_wait(f"mTLS gate: the cluster's certificates are not issued yet ({err})")
        raise RequeueError(f"mTLS secrets not ready: {err}") from err


async def _reconcile_head(ctx: PassContext) -> None:
    heads = ctx.head_pods()
    plan = plan_head(ctx.cached, heads)
    if plan.action == "create":
        await _wait_for_mtls(ctx)
        await _create_head(ctx)
    elif plan.action == "delete":
        deletion = PodDeletion(plan.pod_name, plan.reason, ignore_not_found=False)
        await delete_pods(
            ctx, heads, [deletion], group=HEAD_GROUP, failure_reason="FailedDeleteHeadPod"
        )
        raise RequeueError(
            f"deleted unhealthy head Pod {plan.pod_name} ({plan.reason}); requeueing"
        )
    elif plan.action == "error":
        raise RequeueError(plan.reason)


async def _reconcile_group(ctx: PassContext, group: WorkerGroupSpec) -> None:
    group_name = group.group_name
    pods = ctx.group_pods(group_name)
    plan = plan_worker_group(ctx.rc, group, pods, options=ctx.deps.options, rng=ctx.deps.rng)
    if plan.delete_all:
        await delete_all_pods(ctx, pods, group=group_name, reason="worker group suspended")
        return
    if plan.deletions:
        await delete_pods(
            ctx, pods, plan.deletions, group=group_name, failure_reason="FailedDeleteWorkerPod"
        )
    if plan.creations:
        await _wait_for_mtls(ctx)
        if not _create_in_background(ctx, group, plan.creations):
            await create_workers(ctx, group, plan.creations)
    if plan.error:
        raise RequeueError(plan.error)


async def reconcile_pods(ctx: PassContext) -> Stop | None:
    """Brings the cluster's pods towards the spec (one pass); blocks on the API calls.

    Returns None (the status step runs next) or raises.

    Raises:
        ReplicaFailureError: a pod create or delete failed.
        RequeueError: KubeRay returns an error here (unhealthy pods deleted, several heads...).
    """
    if await _suspend(ctx) or await _recreate_upgrade(ctx):
        return None
    await batch.submit(ctx.deps.options, ctx.deps.client, RAY_CLUSTER, ctx.cached)
    expectations = ctx.deps.expectations
    if expectations.is_satisfied(ctx.namespace, ctx.name, HEAD_GROUP):
        await _reconcile_head(ctx)
    creates = ctx.deps.group_creates
    for group in ctx.rc.spec.worker_group_specs or ():
        if creates is not None:
            failure = creates.take_failure(ctx.namespace, ctx.name, group.group_name)
            if failure is not None:
                raise failure
        if expectations.is_satisfied(ctx.namespace, ctx.name, group.group_name):
            await _reconcile_group(ctx, group)
    return None
