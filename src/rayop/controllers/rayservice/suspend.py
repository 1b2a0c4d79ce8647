"""Suspending and resuming a RayService (``spec.suspend``), as KubeRay's atomic state machine.

Phases, one function each (KubeRay v1.7.0: ``handleSuspend`` in
``ray-operator/controllers/ray/rayservice_controller.go``):

* **requested**: ``spec.suspend`` set and not yet Suspending/Suspended: ``Suspending=True``
  (SuspendRequested) and the active and pending entries, endpoints and ``serviceStatus`` are
  reset; nothing is deleted in this pass;
* **suspending**: every cluster the RayService created and its two Services (and, for an
  incremental upgrade, its Gateway and HTTPRoute) are deleted; once
  none remain, ``Suspending=False`` and ``Suspended=True`` (SuspendComplete). This runs to the
  end even if ``spec.suspend`` is cleared meanwhile;
* **suspended**: nothing to do while ``spec.suspend`` stays set;
* **resumed**: ``spec.suspend`` cleared: ``Suspended=False`` (RayServiceResumed) and ``Ready``
  back to Initializing, written at once; the pass goes on and prepares a new cluster.

The requested phase ends the pass after its status write and looks again at once (50 ms); the
suspending phase requeues after 2 s while clusters remain, and writes its status when done.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from rayop.api.conditions import is_condition_true
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.rayservice import RayServiceConditionType as CondType
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit import settings as requeue
from rayop.controllers.kit.ownership import uid_precondition
from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.rayservice import service_builders as builders
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.cleanup import controlled_by_service, delete_owned_clusters
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.routes import delete_routes
from rayop.controllers.rayservice.status import mark, set_ready_false, write_status
from rayop.kube.errors import Conflict, NotFound
from rayop.kube.resources import SERVICES
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import Stop

Phase = Callable[[PassContext], Awaitable[Stop | None]]


def _is_true(ctx: PassContext, condition_type: str) -> bool:
    return is_condition_true(ctx.status.get("conditions") or [], condition_type)


def phase_of(ctx: PassContext) -> str:
    """Returns the suspend phase: "suspending", "requested", "suspended", "resumed" or ""."""
    suspend = bool(ctx.spec.suspend)
    if _is_true(ctx, CondType.SUSPENDING):
        return "suspending"
    if _is_true(ctx, CondType.SUSPENDED):
        return "suspended" if suspend else "resumed"
    return "requested" if suspend else ""


async def _requested(ctx: PassContext) -> Stop | None:
    mark(ctx, CondType.SUSPENDING, ("True", Reason.SUSPEND_REQUESTED, "Suspend requested"))
    set_ready_false(ctx, Reason.SUSPEND_REQUESTED, "Suspending")
    ctx.status.update(activeServiceStatus={}, pendingServiceStatus={}, numServeEndpoints=0)
    return Stop.after_status_write(Result(requeue_after=requeue.RAYSERVICE_MIN_REQUEUE))


async def _suspending(ctx: PassContext) -> Stop | None:
    remaining = await delete_owned_clusters(ctx)
    remaining = await delete_routes(ctx) or remaining
    for name in (builders.head_service_name(ctx.service), builders.serve_service_name(ctx.service)):
        service = ctx.deps.services.get(ctx.namespace, name)
        if service is None or not controlled_by_service(ctx, service):
            continue  # a Service of that name the RayService did not create is left alone
        remaining = True
        if not service["metadata"].get("deletionTimestamp"):
            await _delete_service(ctx, service)
    if remaining:
        return Stop.discarding_status(Result(requeue_after=requeue.RAYSERVICE_REQUEUE))
    mark(ctx, CondType.SUSPENDING, ("False", Reason.SUSPEND_COMPLETE, "Suspend complete"))
    mark(ctx, CondType.SUSPENDED, ("True", Reason.SUSPEND_COMPLETE, "Suspended"))
    return Stop.after_status_write()


async def _delete_service(ctx: PassContext, service: Obj) -> None:
    """Deletes one Service of the RayService (the cache's copy), with KubeRay's events (gone
    already counts as deleted, as in KubeRay).

    The cached uid is a precondition, so a Service recreated under the name since is not
    deleted (a 409, no event: the retry decides from the cache's newer copy).

    Raises:
        rayop.kube.errors.Conflict: the Service was replaced since the cache's copy.
        rayop.kube.errors.ApiError: the delete failed otherwise (a Warning event says so).
    """
    name = str(service["metadata"]["name"])
    where = f"{ctx.namespace}/{name}"
    failed = f"Failed to delete the Service {where} during suspend: "
    await write_with_events(
        ctx,
        _delete_if_present(ctx, name, uid_precondition(service)),
        action=settings.ACTION_DELETE,
        done=(settings.DELETED_SERVICE, f"Deleted the Service {where} during suspend"),
        failed=(settings.FAILED_TO_DELETE_SERVICE, failed),
        passing=(Conflict,),
    )


async def _delete_if_present(
    ctx: PassContext, name: str, preconditions: dict[str, str] | None
) -> None:
    with contextlib.suppress(NotFound):
        await ctx.deps.client.delete(
            SERVICES, name, namespace=ctx.namespace, preconditions=preconditions
        )


async def _suspended(ctx: PassContext) -> Stop | None:
    return Stop.discarding_status()


async def _resumed(ctx: PassContext) -> Stop | None:
    mark(
        ctx,
        CondType.SUSPENDED,
        ("False", Reason.RESUMED, "Spec.Suspend is false; RayService has resumed."),
    )
    # Ready and UpgradeInProgress are replaced, not updated, so that their lastTransitionTime
    # is now: the initializing timeout (ray.io/initializing-timeout) starts again.
    rearmed = (CondType.READY, CondType.UPGRADE_IN_PROGRESS)
    ctx.status["conditions"] = [
        c for c in ctx.status.get("conditions") or [] if c.get("type") not in rearmed
    ]
    message = "RayService is initializing after resuming from suspend."
    for condition_type in rearmed:
        mark(ctx, condition_type, ("False", Reason.INITIALIZING, message))
    await write_status(ctx)
    return None


PHASES: dict[str, Phase] = {
    "requested": _requested,
    "suspending": _suspending,
    "suspended": _suspended,
    "resumed": _resumed,
}


async def handle_suspend(ctx: PassContext) -> Stop | None:
    """Runs the suspend phase the RayService is in; None means the pass goes on.

    Blocks on the deletes and the status write of the phase.

    Raises:
        rayop.kube.errors.ApiError: a delete or the status write failed.
    """
    phase = PHASES.get(phase_of(ctx))
    return None if phase is None else await phase(ctx)
