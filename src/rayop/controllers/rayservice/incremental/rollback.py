"""Rollback of an incremental upgrade: when it starts, when it is cancelled, when it is done.

KubeRay's ``reconcileRollbackState`` and ``shouldCompleteIncrementalRollback``. While
``UpgradeInProgress`` is True, the goal spec's hash is compared with the two clusters':

* equal to the active cluster's (the user reverted the spec): ``RollbackInProgress=True``
  (``DesiredClusterSpecChanged``, "Goal state reverted to original cluster, rolling back.");
* equal to the pending cluster's: a rollback in progress is cancelled (the condition removed);
* neither (a third spec): ``RollbackInProgress=True``, "Goal state changed mid-upgrade, rolling
  back to original cluster."; a new pending cluster is prepared once the rollback completes.

A rollback is complete when the active cluster is back at 100 % capacity and traffic and the
pending cluster is at 0 % of both or no longer has a ready head; the pending entry is then
cleared (the cluster retires), the condition removed and ``UpgradeInProgress`` set False.
"""

from __future__ import annotations

from rayop.api.common import format_time
from rayop.api.conditions import is_condition_true, remove_condition, set_condition
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.rayservice import RayServiceConditionType as CondType
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.rayservice import cluster_builders as rs_cluster
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.mode import (
    ACTIVE,
    PENDING,
    TARGET_CAPACITY,
    TRAFFIC_ROUTED_PERCENT,
    int_field,
    is_incremental,
    rolling_back,
    upgrading,
)
from rayop.runtime.steps import Stop

REVERTED = "Goal state reverted to original cluster, rolling back."
CHANGED = "Goal state changed mid-upgrade, rolling back to original cluster."
COMPLETE = "Rollback complete, active Ray cluster exists and no pending Ray cluster"


def _mark(ctx: PassContext, condition_type: str, value: tuple[str, str, str]) -> None:
    status, reason, message = value
    new = {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": ctx.generation,
    }
    set_condition(ctx.status.setdefault("conditions", []), new, now=format_time(ctx.now))


def rollback_decision(goal_hash: str, active_hash: str, pending_hash: str, rolling: bool) -> str:
    """Returns "start-reverted", "start-changed", "cancel" or "" (nothing to change)."""
    if goal_hash == active_hash:
        return "" if rolling else "start-reverted"
    if goal_hash == pending_hash:
        return "cancel" if rolling else ""
    return "" if rolling else "start-changed"


async def check_rollback(ctx: PassContext) -> Stop | None:
    """Starts or cancels a rollback of an incremental upgrade in progress; never ends the pass."""
    if not is_incremental(ctx.spec, ctx.deps.options) or not upgrading(ctx.status):
        return None
    active, pending = ctx.cluster(ctx.active_name), ctx.cluster(ctx.pending_name)
    if active is None:
        ctx.event(
            "Warning",
            settings.ROLLBACK_IMPOSSIBLE,
            "Active cluster not found, rollback cannot be initiated",
            action=settings.ACTION_RECONCILE,
        )
        return None
    if pending is None:
        return None
    decision = rollback_decision(
        rs_cluster.spec_hash(rs_cluster.goal_spec(ctx.cached)),
        rs_cluster.cluster_hash(active),
        rs_cluster.cluster_hash(pending),
        rolling_back(ctx.status),
    )
    if decision == "cancel":
        remove_condition(ctx.status.setdefault("conditions", []), CondType.ROLLBACK_IN_PROGRESS)
    elif decision:
        message = REVERTED if decision == "start-reverted" else CHANGED
        value = ("True", str(Reason.DESIRED_CLUSTER_SPEC_CHANGED), message)
        _mark(ctx, CondType.ROLLBACK_IN_PROGRESS, value)
    return None


def rollback_complete(status: Obj, pending_cluster: Obj | None) -> bool:
    """Tells whether a rollback has restored all capacity and traffic to the active cluster."""
    conditions = ((pending_cluster or {}).get("status") or {}).get("conditions") or []
    pending_healthy = pending_cluster is not None and is_condition_true(conditions, "HeadPodReady")
    pending_drained = (
        int_field(status, PENDING, TARGET_CAPACITY) == 0
        and int_field(status, PENDING, TRAFFIC_ROUTED_PERCENT) == 0
    )
    return (
        int_field(status, ACTIVE, TARGET_CAPACITY) == 100
        and int_field(status, ACTIVE, TRAFFIC_ROUTED_PERCENT) == 100
        and (not pending_healthy or pending_drained)
    )


def finish_rollback(ctx: PassContext, pending_cluster: Obj | None) -> None:
    """Ends a completed rollback in ``ctx.status`` (pending cleared, conditions reset)."""
    if not rolling_back(ctx.status) or not rollback_complete(ctx.status, pending_cluster):
        return
    ctx.status[PENDING] = {}
    remove_condition(ctx.status.setdefault("conditions", []), CondType.ROLLBACK_IN_PROGRESS)
    _mark(ctx, CondType.UPGRADE_IN_PROGRESS, ("False", str(Reason.NO_PENDING_CLUSTER), COMPLETE))
