"""``ray.io/initializing-timeout``: a RayService that never becomes ready fails, as in KubeRay v1.7.

The annotation (a Go duration such as ``"10m"``, or whole seconds; its format is validated with
the metadata) bounds how long ``Ready`` may stay False with reason ``Initializing``, counted from
that condition's ``lastTransitionTime`` on the injected clock's wall time
(KubeRay v1.7.0: ``getInitializingTimeout`` and ``markFailedOnInitializingTimeout`` in
``ray-operator/controllers/ray/rayservice_controller.go``):

* :func:`mark_if_timed_out`, run while the status is computed and only when no serve endpoint
  is ready, clears the active and pending cluster names, sets ``Ready=False`` with reason
  ``InitializingTimeout`` and KubeRay's message, and records a Warning event
  ``RayServiceInitializingTimeout``;
* :func:`stop_if_timed_out`, a step after validation and suspend, makes that state terminal:
  the pass only retires the clusters (now neither active nor pending, so each is deleted after
  ``rayClusterDeletionDelaySeconds``), requeueing after 2 s while any remains, and ends. The
  user deletes and recreates the RayService to try again; resuming from suspend re-arms it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from rayop.api.common import format_time, parse_time
from rayop.api.conditions import find_condition, set_condition
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.rayservice import RayServiceConditionType as CondType
from rayop.api.validation import initializing_timeout
from rayop.api.validation.go_values import format_duration
from rayop.controllers.kit import settings as requeue
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.cleanup import cleanup_retired_clusters
from rayop.controllers.rayservice.context import PassContext
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import Stop

__all__ = ["is_timed_out", "mark_if_timed_out", "stop_if_timed_out"]

log = logging.getLogger(__name__)


def _nanoseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def is_timed_out(ctx: PassContext) -> bool:
    """Tells whether the working status says ``Ready=False/InitializingTimeout``."""
    ready = find_condition(ctx.status.get("conditions") or [], CondType.READY)
    return (
        ready is not None
        and ready.get("status") == "False"
        and ready.get("reason") == Reason.INITIALIZING_TIMEOUT
    )


def mark_if_timed_out(ctx: PassContext) -> bool:
    """Fails a RayService initializing for longer than its timeout; returns whether it did.

    Call it while no serve endpoint is ready. Only ``Ready=False/Initializing`` can time out.
    """
    timeout = initializing_timeout(ctx.service.metadata.get("annotations") or {})
    if timeout is None:
        return False
    ready = find_condition(ctx.status.get("conditions") or [], CondType.READY)
    if (
        ready is None
        or ready.get("status") != "False"
        or ready.get("reason") != Reason.INITIALIZING
    ):
        return False
    try:
        since = parse_time(str(ready.get("lastTransitionTime") or ""))
    except ValueError:
        return False
    spent = _nanoseconds(ctx.deps.clock.wall() - since)
    if spent < timeout:
        return False
    log.info(
        "RayService %s: initializing timeout exceeded (timeout %s, initializing for %s)",
        ctx.request,
        format_duration(timeout),
        format_duration(spent),
    )
    ctx.status["activeServiceStatus"] = {}
    ctx.status["pendingServiceStatus"] = {}
    message = (
        "RayService failed to become ready within the configured timeout of "
        f"{format_duration(timeout)}. Time spent initializing: {format_duration(spent)}"
    )
    condition = {
        "type": CondType.READY,
        "status": "False",
        "reason": Reason.INITIALIZING_TIMEOUT,
        "message": message,
        "observedGeneration": ctx.generation,
    }
    set_condition(ctx.status.setdefault("conditions", []), condition, now=format_time(ctx.now))
    ctx.event(
        "Warning",
        settings.RAYSERVICE_INITIALIZING_TIMEOUT,
        f"RayService initializing timeout exceeded after {format_duration(spent)} "
        f"(configured timeout: {format_duration(timeout)})",
        action=settings.ACTION_RECONCILE,
    )
    return True


async def stop_if_timed_out(ctx: PassContext) -> Stop | None:
    """Ends the pass of a timed-out RayService once its clusters are retired; blocks on the
    retirement's patches and deletes.

    Raises:
        rayop.kube.errors.ApiError: a patch or delete failed.
    """
    if not is_timed_out(ctx):
        return None
    await cleanup_retired_clusters(ctx)
    if ctx.owned_clusters():
        return Stop.discarding_status(Result(requeue_after=requeue.RAYSERVICE_REQUEUE))
    log.info("RayService %s: timed out initializing; all its RayClusters are gone", ctx.request)
    return Stop.discarding_status()
