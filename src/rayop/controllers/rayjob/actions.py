"""The RayJob controller's side effects on the API server, each idempotent.

Every write of the RayJob itself (finalizer, status) replaces ``ctx.rayjob`` with what the API
returned and is recorded in the own-writes tracker, so a later pass never bases a write on a
cached copy older than it. Reads go to the informer caches; a create that finds the object already there (a cache that
lags) reads it from the API instead of failing. Deletions report "gone" only once the cache no
longer holds the object, so a later pass never mistakes a deleted object for a live one.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from typing import Any, cast

from rayop.api import keys
from rayop.api.raycluster import RayClusterStatus
from rayop.api.rayjob import DeletionPolicyType, JobSubmissionMode
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.batchscheduler import registry as batch
from rayop.controllers.batchscheduler.interface import RAY_JOB
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels
from rayop.controllers.kit.auth_token import read_auth_token
from rayop.controllers.kit.recorded_write import create_with_events, write_with_events
from rayop.controllers.rayjob import cluster as rc
from rayop.controllers.rayjob.context import JobDashboard, PassContext
from rayop.controllers.rayjob.submitter import build_sidecar_container, build_submitter_job
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, Conflict, NotFound
from rayop.kube.resources import JOBS, RAY_CLUSTERS, RAY_JOBS, SERVICES
from rayop.runtime.informers.indexer import controller_owner

log = logging.getLogger(__name__)

FINALIZER = keys.RAYJOB_FINALIZER


SUBMITTER_GROUP = "submittergroup"
"""The group name a batch scheduler gives the submitter pod (``RayNodeSubmitterGroupLabelValue``)."""


class ClusterNotFoundError(Exception):
    """The cluster named by ``clusterSelector`` does not exist."""


async def ensure_finalizer(ctx: PassContext) -> None:
    """Adds ``ray.io/rayjob-finalizer`` (an update of the RayJob) unless present."""
    finalizers = ctx.rayjob["metadata"].setdefault("finalizers", [])
    if FINALIZER in finalizers:
        return
    finalizers.append(FINALIZER)
    await _update_rayjob(ctx)


async def remove_finalizer(ctx: PassContext) -> None:
    """Removes ``ray.io/rayjob-finalizer`` (an update of the RayJob) if present."""
    finalizers = ctx.rayjob["metadata"].get("finalizers") or []
    if FINALIZER not in finalizers:
        return
    ctx.rayjob["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
    await _update_rayjob(ctx)


async def write_status(ctx: PassContext) -> None:
    """Writes ``ctx.status`` through ``/status`` (a 409 propagates: the pass is retried)."""
    body = dict(ctx.rayjob)
    body["status"] = ctx.status.model_dump(by_alias=True, exclude_none=True)
    ctx.rayjob = await ctx.deps.client.update_status(RAY_JOBS, body)
    ctx.deps.own_writes.record(ctx.rayjob)


async def _update_rayjob(ctx: PassContext) -> None:
    """Updates the RayJob's metadata/spec from ``ctx.rayjob``; records the write."""
    ctx.rayjob = await ctx.deps.client.update(RAY_JOBS, ctx.rayjob)
    ctx.deps.own_writes.record(ctx.rayjob)


def cached_cluster(ctx: PassContext) -> Obj | None:
    """Returns the RayJob's cluster (``status.rayClusterName``) from the cache, or None."""
    name = ctx.status.ray_cluster_name
    return ctx.deps.clusters.get(ctx.namespace, name) if name else None


def cluster_status(cluster: Obj) -> RayClusterStatus | None:
    """Returns a copy of a cluster's status (None when it has none)."""
    status = cluster.get("status")
    return RayClusterStatus.model_validate(copy.deepcopy(dict(status))) if status else None


async def get_or_create_cluster(ctx: PassContext) -> Obj:
    """Returns the RayJob's cluster, creating it from ``rayClusterSpec`` when absent.

    Later ``rayClusterSpec`` changes are ignored, as in KubeRay.

    Raises:
        ClusterNotFoundError: the ``clusterSelector`` cluster does not exist.
        ApiError: the create failed.
    """
    found = cached_cluster(ctx)
    if found is not None:
        return found
    name = ctx.status.ray_cluster_name or ""
    if ctx.job.spec.cluster_selector:
        where = f"{ctx.namespace}/{name}"
        ctx.event(
            "Warning",
            "RayClusterNotFound",
            f"RayCluster {where} set in the clusterSelector is not found. It must be created "
            "manually",
            action="Validate",
        )
        raise ClusterNotFoundError(
            f"clusterSelector mode is enabled, but RayCluster {where} is not found"
        )
    cluster_spec = (ctx.rayjob.get("spec") or {}).get("rayClusterSpec") or {}
    desired = rc.build_raycluster(ctx.job, name, cluster_spec=cluster_spec)
    if ctx.job.spec.submission_mode == JobSubmissionMode.SIDECAR_MODE:
        sidecar = build_sidecar_container(
            ctx.job, desired, job_id=ctx.status.job_id or "", options=ctx.deps.options
        )
        desired = rc.build_raycluster(ctx.job, name, cluster_spec=cluster_spec, sidecar=sidecar)
    if ctx.job.spec.submission_mode == JobSubmissionMode.K8S_JOB_MODE:
        batch.add_metadata(ctx.deps.options, RAY_JOB, ctx.rayjob, desired, "")
    try:
        return await write_with_events(
            ctx,
            ctx.deps.client.create(RAY_CLUSTERS, desired, namespace=ctx.namespace),
            done=("CreatedRayCluster", f"Created RayCluster {ctx.namespace}/{name}"),
            failed=("FailedToCreateRayCluster", f"Failed to create RayCluster {name}: "),
            passing=(AlreadyExists,),
        )
    except AlreadyExists:
        return await ctx.deps.client.get(RAY_CLUSTERS, name, namespace=ctx.namespace)


async def create_submitter_job_if_needed(ctx: PassContext, cluster: Obj) -> None:
    """Creates the K8sJobMode submitter Job (named as the RayJob) unless it exists."""
    if ctx.deps.jobs.get(ctx.namespace, ctx.name) is not None:
        return
    desired = build_submitter_job(
        ctx.job,
        cluster,
        job_id=ctx.status.job_id or "",
        dashboard_url=ctx.status.dashboard_url or "",
        options=ctx.deps.options,
    )
    template = desired["spec"]["template"]
    batch.add_metadata(ctx.deps.options, RAY_JOB, ctx.rayjob, template, SUBMITTER_GROUP)
    await create_with_events(
        ctx,
        ctx.deps.client.create(JOBS, desired, namespace=ctx.namespace),
        done=("CreatedRayJobSubmitter", f"Created Kubernetes Job {ctx.namespace}/{ctx.name}"),
        failed=("FailedToCreateRayJobSubmitter", "Failed to create Job: "),
    )


async def reconcile_head_service(ctx: PassContext, cluster: Obj) -> None:
    """Keeps ``<rayjob>-head-svc`` selecting the cluster's head (ClusterIP preserved)."""
    desired = rc.build_rayjob_head_service(ctx.job, cluster, options=ctx.deps.options)
    where = f"{ctx.namespace}/{desired['metadata']['name']}"
    current = ctx.deps.services.get(ctx.namespace, desired["metadata"]["name"])
    if current is None:
        await create_with_events(
            ctx,
            ctx.deps.client.create(SERVICES, desired, namespace=ctx.namespace),
            action="Create",
            done=("CreatedService", f"Created the service {where}"),
            failed=("FailedToCreateService", f"Failed to create the service {where}, "),
        )
        return
    if rc.head_service_needs_update(current, desired):
        await write_with_events(
            ctx,
            ctx.deps.client.update(SERVICES, rc.updated_head_service(current, desired)),
            action="Update",
            done=("UpdatedService", f"Updated the service {where}"),
            failed=("FailedToUpdateService", f"Failed to update the service {where}, "),
        )


def head_pod(ctx: PassContext, cluster_name: str) -> Obj | None:
    """Returns the cluster's live head pod from the cache, or None."""
    selector = labels.head_pods_selector(cluster_name)
    for pod in ctx.deps.pods.list(ctx.namespace, label_selector=selector):
        if not (pod.get("metadata") or {}).get("deletionTimestamp"):
            return pod
    return None


async def auth_token(ctx: PassContext, cluster: Obj) -> str | None:
    """Returns the cluster's Ray auth token (token mode without K8s token auth), else None."""
    return await read_auth_token(cluster, secrets=ctx.deps.secrets, client=ctx.deps.client)


async def open_dashboard(ctx: PassContext, cluster: Obj) -> JobDashboard:
    """Returns a dashboard client for the cluster's head (close it after use)."""
    token = await auth_token(ctx, cluster)
    return ctx.deps.dashboards(cluster, ctx.status.dashboard_url or "", token)


def controlled_by_job(ctx: PassContext, obj: Obj) -> bool:
    """Tells whether this RayJob is the controlling owner of ``obj`` (so rayop created it)."""
    uid = (ctx.rayjob.get("metadata") or {}).get("uid")
    return bool(uid) and (controller_owner(obj) or {}).get("uid") == uid


async def _delete(
    ctx: PassContext, res: Any, obj: Obj | None, what: str, reasons: tuple[str, str]
) -> bool:
    """Deletes an object this RayJob created; True once it is gone.

    ``reasons`` are the (deleted, failed) event reasons; ``what`` words the events as KubeRay
    does ("cluster", "submitter K8s Job"). An object of that name that this RayJob does not
    control (a user's, or another owner's) is never deleted: it counts as gone for the RayJob,
    and a Warning event says so. The delete names the cached copy's uid and resourceVersion as
    preconditions, so a copy the cache has not caught up with (a user who just took the object
    over by removing its ownerReference) is not deleted: the API server answers 409, and the
    retry decides from a newer copy.

    Raises:
        Conflict: the object changed since the cache's copy (no event: the queue retries).
        ApiError: the delete failed otherwise (a Warning event says so).
    """
    if obj is None:
        return True
    meta = obj.get("metadata") or {}
    where = f"{ctx.namespace}/{meta.get('name', '')}"
    if not controlled_by_job(ctx, obj):
        ctx.event(
            "Warning",
            "SkippedDeletingUnownedObject",
            f"Not deleting {what} {where}: it is not controlled by this RayJob",
        )
        return True
    if meta.get("deletionTimestamp"):
        return False
    deleted, failed = reasons
    preconditions = {k: str(meta[k]) for k in ("uid", "resourceVersion") if meta.get(k)}
    with contextlib.suppress(NotFound):
        await write_with_events(
            ctx,
            ctx.deps.client.delete(
                res,
                str(meta.get("name", "")),
                namespace=ctx.namespace,
                propagation_policy="Background",
                preconditions=preconditions or None,
            ),
            action="Delete",
            done=(deleted, f"Deleted {what} {where}"),
            failed=(failed, f"Failed to delete {what} {where}: "),
            passing=(NotFound, Conflict),
        )
    return False


async def delete_cluster(ctx: PassContext) -> bool:
    """Deletes the RayJob's cluster (never a ``clusterSelector`` one); True once it is gone."""
    if ctx.job.spec.cluster_selector:
        return True
    reasons = ("DeletedRayCluster", "FailedToDeleteRayCluster")
    return await _delete(ctx, RAY_CLUSTERS, cached_cluster(ctx), "cluster", reasons)


async def delete_submitter_job(ctx: PassContext) -> bool:
    """Deletes the K8sJobMode submitter Job (background propagation); True once it is gone."""
    if ctx.job.spec.submission_mode != JobSubmissionMode.K8S_JOB_MODE:
        return True
    batch_job = ctx.deps.jobs.get(ctx.namespace, ctx.name)
    reasons = ("DeletedRayJobSubmitter", "FailedToDeleteRayJobSubmitter")
    return await _delete(ctx, JOBS, batch_job, "submitter K8s Job", reasons)


async def suspend_worker_groups(ctx: PassContext) -> None:
    """Sets ``suspend: true`` on every worker group of the cluster (policy DeleteWorkers)."""
    cluster = cached_cluster(ctx)
    if cluster is None or not controlled_by_job(ctx, cluster):
        return
    updated = copy.deepcopy(dict(cluster))
    for group in updated.get("spec", {}).get("workerGroupSpecs") or []:
        group["suspend"] = True
    await ctx.deps.client.update(RAY_CLUSTERS, updated)
    ctx.event(
        "Normal", "SuspendedWorkerGroups", f"Suspended the worker groups of {cs.name(cluster)}"
    )


def deletion_done(ctx: PassContext, policy: DeletionPolicyType) -> bool:
    """Tells whether a deletion policy's effect is already in place (from the caches)."""
    cluster = cached_cluster(ctx)
    gone = cluster is None or bool((cluster.get("metadata") or {}).get("deletionTimestamp"))
    if policy == DeletionPolicyType.DELETE_CLUSTER:
        return gone
    if policy == DeletionPolicyType.DELETE_WORKERS:
        return gone or all(cs.is_group_suspended(g) for g in cs.worker_groups(cluster or {}))
    return policy == DeletionPolicyType.DELETE_NONE


async def execute_deletion(ctx: PassContext, policy: DeletionPolicyType) -> None:
    """Carries out one deletion policy."""
    if policy == DeletionPolicyType.DELETE_SELF:
        await ctx.deps.client.delete(
            RAY_JOBS, ctx.name, namespace=ctx.namespace, propagation_policy="Background"
        )
    elif policy == DeletionPolicyType.DELETE_CLUSTER:
        await delete_cluster(ctx)
    elif policy == DeletionPolicyType.DELETE_WORKERS:
        await suspend_worker_groups(ctx)


def _kube_client(ctx: PassContext) -> KubeClient:
    """The operator's client (``ObjectClient`` is only the subset the RayJob's own steps use)."""
    return cast(KubeClient, ctx.deps.client)


async def submit_to_batch_scheduler(ctx: PassContext) -> None:
    """Hands the RayJob to the batch scheduler before its cluster exists (a PodGroup); blocks.

    Raises:
        BatchSchedulingError: the scheduler refuses the RayJob; ApiError: a call failed.
    """
    await batch.submit(ctx.deps.options, _kube_client(ctx), RAY_JOB, ctx.rayjob)


async def cleanup_batch_scheduler(ctx: PassContext) -> None:
    """Releases what the batch scheduler holds for the RayJob, with KubeRay's events; blocks.

    Raises:
        Exception: the cleanup failed (after a ``FailedToCleanupBatchScheduler`` Warning).
    """
    rayjob = {**ctx.rayjob, "status": {"rayClusterName": ctx.status.ray_cluster_name or ""}}
    where = f"{ctx.namespace}/{ctx.name}"
    try:
        changed = await batch.cleanup(ctx.deps.options, _kube_client(ctx), rayjob)
    except Exception as err:
        ctx.event(
            "Warning",
            "FailedToCleanupBatchScheduler",
            f"Failed to cleanup batch scheduler resources for RayJob {where}: {err}",
            action="Cleanup",
        )
        raise
    if changed:
        ctx.event(
            "Normal",
            "BatchSchedulerCleanedUp",
            f"Cleaned up batch scheduler resources for RayJob {where}",
            action="Cleanup",
        )
