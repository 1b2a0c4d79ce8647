"""Suspending and resuming a RayService (``spec.suspend``), as KubeRay's atomic state machine.

Phases, one function each (kuberay-v1.md §6 step 6):

* **requested**: ``spec.suspend`` set and not yet Suspending/Suspended: ``Suspending=True``
  (SuspendRequested) and the active and pending entries, endpoints and ``serviceStatus`` are
  reset; nothing is deleted in this pass;
* **suspending**: every cluster the RayService created and its two Services are deleted; once
  none remain, ``Suspending=False`` and ``Suspended=True`` (SuspendComplete). This runs to the
  end even if ``spec.suspend`` is cleared meanwhile;
* **suspended**: nothing to do while ``spec.suspend`` stays set;
* **resumed**: ``spec.suspend`` cleared: ``Suspended=False`` (RayServiceResumed) and ``Ready``
  back to Initializing; the pass goes on and prepares a new cluster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from rayop.api.conditions import is_condition_true, set_condition
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.rayservice import RayServiceConditionType as CondType
from rayop.controllers.common import settings as requeue
from rayop.controllers.rayservice import service_builders as builders
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.cleanup import delete_cluster
from rayop.controllers.rayservice.context import ServiceContext, rfc3339
from rayop.controllers.rayservice.status import set_ready_false, write_status
from rayop.kube.errors import NotFound
from rayop.kube.resources import SERVICES
from rayop.runtime.reconcile import Result

Phase = Callable[[ServiceContext], Awaitable[Result | None]]


def _is_true(ctx: ServiceContext, condition_type: str) -> bool:
    return is_condition_true(ctx.status.get("conditions") or [], condition_type)


def _set(ctx: ServiceContext, condition_type: str, status: str, reason: str, message: str) -> None:
    new = {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": int(ctx.cached["metadata"].get("generation") or 0),
    }
    set_condition(ctx.status.setdefault("conditions", []), new, now=rfc3339(ctx.deps.wall.now()))


def phase_of(ctx: ServiceContext) -> str:
    """Returns the suspend phase: "suspending", "requested", "suspended", "resumed" or ""."""
    suspend = bool(ctx.spec.get("suspend"))
    if _is_true(ctx, CondType.SUSPENDING):
        return "suspending"
    if _is_true(ctx, CondType.SUSPENDED):
        return "suspended" if suspend else "resumed"
    return "requested" if suspend else ""


async def _requested(ctx: ServiceContext) -> Result | None:
    _set(ctx, CondType.SUSPENDING, "True", Reason.SUSPEND_REQUESTED, "Suspend requested")
    generation = int(ctx.cached["metadata"].get("generation") or 0)
    now = rfc3339(ctx.deps.wall.now())
    set_ready_false(
        ctx.status, Reason.SUSPEND_REQUESTED, "Suspending", generation=generation, now=now
    )
    ctx.status.update(activeServiceStatus={}, pendingServiceStatus={}, numServeEndpoints=0)
    await write_status(ctx)
    return Result(requeue_after=requeue.RAYSERVICE_MIN_REQUEUE)


async def _suspending(ctx: ServiceContext) -> Result | None:
    clusters = ctx.owned_clusters()
    for cluster in clusters:
        if not cluster["metadata"].get("deletionTimestamp"):
            await delete_cluster(ctx, cluster["metadata"]["name"])
    for name in (builders.head_service_name(ctx.cached), builders.serve_service_name(ctx.cached)):
        if ctx.deps.services.get(ctx.namespace, name) is not None:
            with contextlib.suppress(NotFound):
                await ctx.deps.client.delete(SERVICES, name, namespace=ctx.namespace)
            ctx.event("Normal", settings.DELETED_SERVICE, f"Deleted service {name}")
    if clusters:
        return Result(requeue_after=requeue.RAYSERVICE_REQUEUE)
    _set(ctx, CondType.SUSPENDING, "False", Reason.SUSPEND_COMPLETE, "Suspend complete")
    _set(ctx, CondType.SUSPENDED, "True", Reason.SUSPEND_COMPLETE, "Suspended")
    await write_status(ctx)
    return Result()


async def _suspended(ctx: ServiceContext) -> Result | None:
    return Result()


async def _resumed(ctx: ServiceContext) -> Result | None:
    _set(ctx, CondType.SUSPENDED, "False", Reason.RESUMED, "RayService resumed")
    _set(ctx, CondType.READY, "False", Reason.INITIALIZING, "RayService is initializing")
    await write_status(ctx)
    return None


PHASES: dict[str, Phase] = {
    "requested": _requested,
    "suspending": _suspending,
    "suspended": _suspended,
    "resumed": _resumed,
}


async def handle_suspend(ctx: ServiceContext) -> Result | None:
    """Runs the suspend phase the RayService is in; None means the pass goes on.

    Raises:
        rayop.kube.errors.ApiError: a delete or the status write failed.
    """
    phase = PHASES.get(phase_of(ctx))
    return None if phase is None else await phase(ctx)
