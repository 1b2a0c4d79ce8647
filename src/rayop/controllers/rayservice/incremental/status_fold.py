"""What an incremental upgrade adds to the status at the end of a pass.

KubeRay's ``calculateStatus`` for NewClusterWithIncrementalUpgrade, once the Services point at a
ready cluster: each entry's ``trafficRoutedPercent`` is the HTTPRoute's weight for its cluster
(untouched while there is no route), with ``lastTrafficMigratedTime`` set when it changed; then
the pending cluster is promoted when the upgrade is complete (the active cluster at 0 %
capacity, the pending one at 100 % traffic, no rollback under way) or, on a first deployment,
as soon as it serves. A completed rollback is then ended (:func:`~.rollback.finish_rollback`).
``numServeEndpoints`` counts the ready pods of both clusters' own serve Services.
"""

from __future__ import annotations

from typing import Any

from rayop.api.common import format_time
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.gateway import (
    cluster_serve_service_name,
    route_weights,
)
from rayop.controllers.rayservice.incremental.mode import (
    ACTIVE,
    LAST_TRAFFIC_MIGRATED_TIME,
    PENDING,
    TARGET_CAPACITY,
    TRAFFIC_ROUTED_PERCENT,
    entry,
    int_field,
    rolling_back,
    upgrading,
)
from rayop.controllers.rayservice.incremental.rollback import finish_rollback


def record_weights(
    status: dict[str, Any], route: Obj | None, *, pending_exists: bool, now: str
) -> None:
    """Copies the route's weights into ``trafficRoutedPercent`` (and the migration time)."""
    active_name = str(entry(status, ACTIVE).get("rayClusterName") or "")
    pending_name = str(entry(status, PENDING).get("rayClusterName") or "")
    active_weight, pending_weight = route_weights(route, active_name, pending_name)
    for which, weight, present in (
        (ACTIVE, active_weight, True),
        (PENDING, pending_weight, pending_exists),
    ):
        if weight < 0 or not present:
            continue
        item = status.setdefault(which, {})
        old = item.get(TRAFFIC_ROUTED_PERCENT)
        item[TRAFFIC_ROUTED_PERCENT] = weight
        if old is None or int(old) != weight:
            item[LAST_TRAFFIC_MIGRATED_TIME] = now


def upgrade_complete(status: Obj, pending_exists: bool) -> bool:
    """Tells whether the old cluster has no capacity left and the new one all the traffic."""
    return (
        pending_exists
        and int_field(status, ACTIVE, TARGET_CAPACITY) == 0
        and int_field(status, PENDING, TRAFFIC_ROUTED_PERCENT) == 100
    )


def should_promote(status: Obj, pending_exists: bool) -> bool:
    """Tells whether the pending cluster becomes the active one now."""
    if upgrading(status):
        return not rolling_back(status) and upgrade_complete(status, pending_exists)
    active = entry(status, ACTIVE).get("rayClusterName")
    return not active and bool(entry(status, PENDING).get("rayClusterName"))


def fold_incremental(ctx: PassContext) -> list[str]:
    """Folds traffic, promotion and rollback into ``ctx.status``; returns the serve Services
    whose ready endpoints make ``numServeEndpoints``.

    As KubeRay counts them, the Services are those of the clusters the pass started with: the
    active cluster's own (``<svc>-serve-svc`` when there was none, which an incremental
    RayService never has) plus the pending cluster's, unless a completed rollback dropped it.
    """
    status = ctx.status
    active_name = ctx.active_name if ctx.cluster(ctx.active_name) is not None else ""
    pending_cluster = ctx.cluster(ctx.pending_name)
    pending_name = ctx.pending_name if pending_cluster is not None else ""
    if ctx.services_reconciled:
        route = ctx.routes.route if ctx.routes is not None else None
        record_weights(
            status, route, pending_exists=pending_cluster is not None, now=format_time(ctx.now)
        )
        if should_promote(status, pending_cluster is not None):
            status[ACTIVE] = status.get(PENDING) or {}
            status[PENDING] = {}
    finish_rollback(ctx, pending_cluster)
    names = [cluster_serve_service_name(active_name or ctx.name)]
    if pending_name and (ctx.active_name == pending_name or ctx.pending_name == pending_name):
        names.append(cluster_serve_service_name(pending_name))
    return names
