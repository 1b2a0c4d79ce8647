"""Serve ``target_capacity`` during an incremental upgrade: when to change it, to what, and how.

KubeRay's ``checkIfNeedTargetCapacityUpdate`` and ``reconcileServeTargetCapacity``. Nothing
changes until both clusters are named and the Gateway and HTTPRoute are ready (their
implementation says so) and the upgrade is not done (active 0 %, pending 100 %). Then, for the
cluster being reconciled, capacities move by ``maxSurgePercent`` only once the route's weight
has caught up with the capacity of the cluster gaining traffic:

* upgrade: while the two capacities sum to at most 100, the pending cluster's rises (to 100 at
  most); above 100, the active cluster's falls (to 0 at least);
* rollback: while they sum to more than 100, the pending cluster's falls; else the active
  cluster's rises, until active 100 and pending 0.

The new capacity is PUT with the serve config (``target_capacity`` added) and then written to
the cluster's status entry.
"""

from __future__ import annotations

from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.dashboard.client import DashboardClient, DashboardError
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.gateway import gateway_ready, route_ready
from rayop.controllers.rayservice.incremental.mode import (
    ACTIVE,
    PENDING,
    TARGET_CAPACITY,
    TRAFFIC_ROUTED_PERCENT,
    entry,
    int_field,
    rolling_back,
    upgrade_options,
)
from rayop.controllers.rayservice.incremental.state import RouteState


def needs_update(status: Obj, routes: RouteState) -> tuple[bool, str]:
    """Returns whether capacities may change this pass, and KubeRay's reason."""
    if not entry(status, ACTIVE).get("rayClusterName") or not entry(status, PENDING).get(
        "rayClusterName"
    ):
        return (
            False,
            "Both active and pending RayCluster instances are required for "
            "NewClusterWithIncrementalUpgrade.",
        )
    if routes.gateway is None:
        return False, f"Failed to retrieve Gateway for RayService: {routes.gateway_error}"
    if not gateway_ready(routes.gateway):
        return False, "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready."
    if routes.route is None:
        return False, f"Failed to retrieve HTTPRoute for RayService: {routes.route_error}"
    if not route_ready(routes.gateway, routes.route):
        return False, "HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready."
    active_tc = int_field(status, ACTIVE, TARGET_CAPACITY)
    pending_tc = int_field(status, PENDING, TARGET_CAPACITY)
    if active_tc is None or int_field(status, ACTIVE, TRAFFIC_ROUTED_PERCENT) is None:
        return True, "Active RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."
    pending_trp = int_field(status, PENDING, TRAFFIC_ROUTED_PERCENT)
    if pending_tc is None or pending_trp is None:
        return True, "Pending RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."
    if rolling_back(status):
        if active_tc == 100 and pending_tc == 0:
            return False, "Rollback complete: all traffic has been restored to the active cluster."
        return True, "Rollback in progress: traffic is being restored to the active cluster."
    if active_tc == 0 and pending_tc == 100:
        return (
            False,
            "All traffic has migrated to the upgraded cluster and "
            "NewClusterWithIncrementalUpgrade is complete.",
        )
    if pending_tc < 100 or pending_trp < 100:
        return True, "Pending RayCluster has not finished scaling up."
    return True, "Active RayCluster TargetCapacity has not finished scaling down."


def goal_capacity(status: dict[str, Any], cluster_name: str, max_surge: int) -> int | None:
    """Returns the new ``target_capacity`` of ``cluster_name``, or None to leave it.

    Sets unset capacities in ``status`` first (active 100, pending 0), as KubeRay does.
    """
    active, pending = status.setdefault(ACTIVE, {}), status.setdefault(PENDING, {})
    active.setdefault(TARGET_CAPACITY, 100)
    pending.setdefault(TARGET_CAPACITY, 0)
    active_tc, pending_tc = int(active[TARGET_CAPACITY]), int(pending[TARGET_CAPACITY])
    total = active_tc + pending_tc
    is_active = cluster_name == active.get("rayClusterName")
    is_pending = not is_active and cluster_name == pending.get("rayClusterName")
    if rolling_back(status):
        if active_tc != int(active.get(TRAFFIC_ROUTED_PERCENT) or 0):
            return None
        if total > 100:
            return max(0, pending_tc - max_surge) if is_pending else None
        return min(100, active_tc + max_surge) if is_active else None
    if pending_tc != int(pending.get(TRAFFIC_ROUTED_PERCENT) or 0):
        return None
    if is_active and total > 100:
        return max(0, active_tc - max_surge)
    if is_pending and total <= 100:
        return min(100, pending_tc + max_surge)
    return None


async def reconcile_target_capacity(
    ctx: PassContext, client: DashboardClient, cluster_name: str, config: dict[str, Any]
) -> None:
    """Moves one cluster's ``target_capacity`` a step when KubeRay would; blocks on the PUT.

    Args:
        ctx: The pass.
        client: The cluster's dashboard.
        cluster_name: The cluster being reconciled.
        config: ``serveConfigV2`` as JSON (without ``target_capacity``).

    Raises:
        DashboardError: the dashboard refused the config.
    """
    routes = ctx.routes
    if routes is None:
        return
    update, _reason = needs_update(ctx.status, routes)
    if not update:
        return
    where = f"{ctx.namespace}/{cluster_name}"
    surge = upgrade_options(ctx.spec).max_surge_percent
    goal = goal_capacity(ctx.status, cluster_name, surge)
    if goal is not None:
        try:
            await client.update_deployments({**config, "target_capacity": goal})
        except DashboardError as exc:
            note = (
                f"Failed to update target_capacity of serve applications to the RayCluster "
                f"{where}: {exc}"
            )
            ctx.event(
                "Warning",
                settings.FAILED_TO_UPDATE_TARGET_CAPACITY,
                note,
                action=settings.ACTION_UPDATE,
            )
            raise
        for which in (ACTIVE, PENDING):
            if entry(ctx.status, which).get("rayClusterName") == cluster_name:
                ctx.status[which][TARGET_CAPACITY] = goal
                break
    ctx.event(
        "Normal",
        settings.UPDATED_SERVE_TARGET_CAPACITY,
        f"Updated target_capacity of serve applications to to the RayCluster {where}",
        action=settings.ACTION_UPDATE,
    )
