"""Steps that may end a RayService pass early: managedBy, deletion, finalizer, validation.

* ``spec.managedBy`` other than ``ray.io/kuberay-operator`` leaves the object to another
  controller (MultiKueue);
* a RayService being deleted gets every cluster it created deleted at once, then loses the
  ``ray.io/rayservice-finalizer``; otherwise the finalizer is added when missing;
* an invalid spec (a feature whose gate is off included) gets a Warning event and
  ``Ready=False/ValidationFailed``, and no requeue:
  the next spec change triggers a new pass (kuberay-v1.md §6 steps 1, 4 and 5).
"""

from __future__ import annotations

import logging

from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.validation import validate_rayservice
from rayop.controllers.common import settings as requeue
from rayop.controllers.common.gate_checks import rayservice_gate_problems
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.cleanup import delete_cluster
from rayop.controllers.rayservice.context import ServiceContext, rfc3339
from rayop.controllers.rayservice.status import set_ready_false, status_changed, write_status
from rayop.kube.resources import RAY_SERVICES
from rayop.runtime.reconcile import Result

log = logging.getLogger(__name__)


async def check_managed_by(ctx: ServiceContext) -> Result | None:
    """Ends the pass when another controller manages the RayService."""
    managed_by = ctx.spec.get("managedBy")
    if managed_by and managed_by != MANAGED_BY_KUBERAY:
        log.info("RayService %s is managed by %s; skipping", ctx.request, managed_by)
        return Result()
    return None


async def handle_deletion(ctx: ServiceContext) -> Result | None:
    """Deletes the clusters of a RayService being deleted, then drops the finalizer.

    Raises:
        rayop.kube.errors.ApiError: a delete or the finalizer patch failed.
    """
    meta = ctx.cached["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    if not meta.get("deletionTimestamp"):
        if settings.FINALIZER not in finalizers:
            await _set_finalizers(ctx, [*finalizers, settings.FINALIZER])
        return None
    if settings.FINALIZER not in finalizers:
        return Result()
    clusters = ctx.owned_clusters()
    for cluster in clusters:
        if not cluster["metadata"].get("deletionTimestamp"):
            await delete_cluster(ctx, cluster["metadata"]["name"])
    if clusters:
        return Result(requeue_after=requeue.RAYSERVICE_REQUEUE)
    await _set_finalizers(ctx, [f for f in finalizers if f != settings.FINALIZER])
    ctx.deps.serve_cache.forget(ctx.namespace, ctx.name)
    return Result()


async def _set_finalizers(ctx: ServiceContext, finalizers: list[str]) -> None:
    meta = ctx.cached["metadata"]
    body = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
    ctx.cached = await ctx.deps.client.patch(RAY_SERVICES, ctx.name, body, namespace=ctx.namespace)


async def validate(ctx: ServiceContext) -> Result | None:
    """Reports an invalid RayService (event + ``Ready=False/ValidationFailed``) and stops.

    Raises:
        rayop.kube.errors.ApiError: the status write failed.
    """
    problems = validate_rayservice(ctx.cached)
    problems += rayservice_gate_problems(ctx.cached, ctx.deps.options.feature_gates)
    if not problems:
        return None
    message = "; ".join(problems)
    ctx.event("Warning", settings.INVALID_RAYSERVICE_SPEC, message)
    generation = int(ctx.cached["metadata"].get("generation") or 0)
    now = rfc3339(ctx.deps.wall.now())
    set_ready_false(ctx.status, Reason.VALIDATION_FAILED, message, generation=generation, now=now)
    ctx.status["observedGeneration"] = generation
    if status_changed(ctx.cached.get("status") or {}, ctx.status):
        await write_status(ctx)
    return Result()
