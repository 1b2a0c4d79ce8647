"""The GCS fault-tolerance Redis cleanup finalizer.

KubeRay v1.7.0: the GCS FT finalizer branch of ``rayClusterReconcile`` and
``buildRedisCleanupJob`` in ``ray-operator/controllers/ray/raycluster_controller.go``.

A RayCluster with Redis-backed GCS FT gets the finalizer ``ray.io/gcs-ft-redis-cleanup-finalizer``.
When it is deleted, the operator deletes its pods, then runs the Job ``<cluster>-redis-cleanup``
(the head's image and Redis env, running Ray's ``cleanup_redis_storage``) and removes the
finalizer once the Job finished, or unconditionally after the deletion timeout (annotation
``ray.io/gcs-ft-deletion-timeout``, 300 s by default, measured on the injected clock's wall
time). Finalizers are added and removed with a full-object update carrying the cached
resourceVersion (a 409 propagates and is retried). The step ends every pass it acts in with
:meth:`~rayop.runtime.steps.Stop.discarding_status`: KubeRay computes no status there.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.api import keys
from rayop.api.common import parse_time
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names, settings
from rayop.controllers.kit.recorded_write import create_with_events
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster.context import PassContext
from rayop.controllers.raycluster.pod_sync import delete_all_pods
from rayop.controllers.raycluster.pods import build_head_pod, owner_reference
from rayop.kube.resources import JOBS, RAY_CLUSTERS
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import Stop

FINALIZER = keys.GCS_FT_REDIS_CLEANUP_FINALIZER
DEFAULT_DELETION_TIMEOUT_SECONDS = 300
_FINISHED = frozenset({"Complete", "Failed", "FailureTarget"})
_REQUEUE_SOON = Stop.discarding_status(
    Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE)
)
_CLEANUP_SCRIPT = (
    "import os, sys; from urllib.parse import urlparse; "
    "from ray._private.gcs_utils import cleanup_redis_storage; "
    "address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "address = address if '://' in address else 'redis://' + address; "
    "parsed = urlparse(address); "
    "ok = cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
    "username=os.getenv('REDIS_USERNAME', parsed.username), "
    "password=os.getenv('REDIS_PASSWORD', parsed.password), "
    "use_ssl=parsed.scheme == 'rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')); "
    "sys.exit(0 if ok else 1)"
)


def wants_cleanup_finalizer(ctx: PassContext) -> bool:
    """Tells whether the cluster uses Redis GCS FT and the cleanup is enabled."""
    rc = ctx.rc
    return (
        ctx.deps.options.enable_gcs_ft_redis_cleanup
        and cs.is_gcs_ft_enabled(rc)
        and not cs.is_gcs_ft_embedded(rc)
    )


def _finalizers(ctx: PassContext) -> list[str]:
    return [str(f) for f in cs.meta(ctx.cached).get("finalizers") or []]


async def _set_finalizers(ctx: PassContext, finalizers: list[str]) -> None:
    obj = ctx.copy_cached()
    obj["metadata"]["finalizers"] = finalizers
    await ctx.deps.client.update(RAY_CLUSTERS, obj)


async def _remove_finalizer(ctx: PassContext) -> None:
    await _set_finalizers(ctx, [f for f in _finalizers(ctx) if f != FINALIZER])


def build_cleanup_job(ctx: PassContext) -> dict[str, Any]:
    """Returns the ``<cluster>-redis-cleanup`` Job: the head's pod, reduced to one container."""
    head = build_head_pod(ctx.rc, options=ctx.deps.options, spec_hash=ctx.spec_hash())
    pod_labels = dict(head["metadata"].get("labels") or {})
    pod_labels[keys.RAY_NODE_TYPE] = labels.REDIS_CLEANUP
    ray = copy.deepcopy(head["spec"]["containers"][0])
    for key in ("livenessProbe", "readinessProbe", "ports", "lifecycle"):
        ray.pop(key, None)
    ray["command"] = ["/bin/bash", "-lc", "--"]
    ray["args"] = [f'python -c "{_CLEANUP_SCRIPT}"']
    ray["resources"] = {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "256Mi"},
    }
    spec = {k: v for k, v in head["spec"].items() if k not in ("initContainers", "containers")}
    spec["containers"] = [ray]
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.redis_cleanup_job_name(ctx.rc),
            "namespace": ctx.namespace,
            "labels": pod_labels,
            "annotations": dict(head["metadata"].get("annotations") or {}),
            "ownerReferences": [owner_reference(ctx.rc)],
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 300,
            "template": {"metadata": {"labels": pod_labels}, "spec": spec},
        },
    }


def _job_finished(job: Any) -> bool:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in _FINISHED and condition.get("status") == "True":
            return True
    return False


def _deletion_timeout(ctx: PassContext) -> float:
    raw = cs.annotations_of(ctx.cached).get(keys.GCS_FT_DELETION_TIMEOUT)
    try:
        return float(int(raw)) if raw is not None else DEFAULT_DELETION_TIMEOUT_SECONDS
    except ValueError:
        return DEFAULT_DELETION_TIMEOUT_SECONDS


async def _cleanup(ctx: PassContext) -> Stop:
    pods = ctx.cluster_pods()
    heads = [p for p in pods if cs.labels_of(p).get(keys.RAY_NODE_TYPE) == labels.HEAD]
    workers = [p for p in pods if p not in heads]
    await delete_all_pods(ctx, heads, group="", reason="GCS FT Redis cleanup")
    await delete_all_pods(ctx, workers, group="", reason="GCS FT Redis cleanup")
    if ctx.head_pods():
        return Stop.discarding_status(Result(requeue_after=settings.RAYCLUSTER_REDIS_CLEANUP_WAIT))
    deletion_timestamp = cs.meta(ctx.cached).get("deletionTimestamp")
    deleted_at = parse_time(str(deletion_timestamp)) if deletion_timestamp else None
    if deleted_at is not None and (ctx.now - deleted_at).total_seconds() >= _deletion_timeout(ctx):
        await _remove_finalizer(ctx)
        ctx.event(
            "Warning",
            ev.FORCE_DELETED_STUCK_CLUSTER,
            f"Removed the {FINALIZER} finalizer after the deletion timeout without Redis cleanup",
            action=ev.ACTION_DELETE,
        )
        return Stop.discarding_status()
    job_name = names.redis_cleanup_job_name(ctx.rc)
    job = ctx.deps.informers.informer(JOBS).get(ctx.namespace, job_name)
    if job is not None:
        if _job_finished(job):
            await _remove_finalizer(ctx)
            return Stop.discarding_status()
        return _REQUEUE_SOON
    await create_with_events(
        ctx,
        ctx.deps.client.create(JOBS, build_cleanup_job(ctx), namespace=ctx.namespace),
        action=ev.ACTION_CREATE,
        done=(ev.CREATED_REDIS_CLEANUP_JOB, f"Created Job {ctx.namespace}/{job_name}"),
        failed=(ev.FAILED_TO_CREATE_REDIS_CLEANUP_JOB, f"Failed to create Job {job_name}: "),
    )
    return _REQUEUE_SOON


async def reconcile_redis_cleanup(ctx: PassContext) -> Stop | None:
    """The finalizer step: add it, or on deletion clean up and then remove it; None to go on.

    Raises:
        Conflict: the finalizer update lost a race; any other ApiError.
    """
    deleting = bool(cs.meta(ctx.cached).get("deletionTimestamp"))
    has_finalizer = FINALIZER in _finalizers(ctx)
    if cs.is_gcs_ft_embedded(ctx.rc) and deleting and has_finalizer:
        await _remove_finalizer(ctx)
        return Stop.discarding_status()
    if not wants_cleanup_finalizer(ctx):
        return None
    if not deleting:
        if has_finalizer:
            return None
        await _set_finalizers(ctx, [*_finalizers(ctx), FINALIZER])
        return _REQUEUE_SOON
    if not has_finalizer:
        return None
    return await _cleanup(ctx)
