"""The status step of a RayCluster reconcile: compute from the cache, write only on change.

KubeRay's ``calculateStatus`` + ``updateRayClusterStatus`` (kuberay-v1.md §3.6, §3.7): the new
status is computed from the cached pods and services; it is written with a full-object update of
the ``/status`` subresource carrying the cached resourceVersion, and only when
:func:`status_changed` says so. A 409 is not retried here: it propagates, the controller requeues
with backoff, and the next pass recomputes from the newer cached object.
"""

from __future__ import annotations

from typing import Any

from rayop.api.common import format_time
from rayop.controllers.raycluster.reconcile_context import ReconcileContext
from rayop.controllers.raycluster.status import calculate_status, status_changed
from rayop.kube.resources import RAY_CLUSTERS


async def write_status(ctx: ReconcileContext, status: dict[str, Any]) -> bool:
    """Writes ``status`` through ``/status`` if it differs from the cached one; returns whether
    it wrote. Blocks on the API.

    Raises:
        Conflict: the cached resourceVersion is stale; any other ApiError.
    """
    if not status_changed(ctx.cached.get("status"), status):
        return False
    obj = ctx.copy_cached()
    obj["status"] = status
    await ctx.deps.client.update_status(RAY_CLUSTERS, obj)
    return True


async def sync_status(ctx: ReconcileContext, reconcile_error: BaseException | None) -> bool:
    """Computes the status from the caches and writes it when changed; returns whether it wrote.

    Raises:
        StatusUnavailableError: the status cannot be computed yet (no head service...).
        Conflict: the status write lost a race; any other ApiError.
    """
    status = calculate_status(
        ctx.cluster,
        ctx.cluster_pods(),
        ctx.owned_services(),
        now=format_time(ctx.now()),
        reconcile_error=reconcile_error,
        status_conditions_gate=ctx.deps.options.feature_gates.ray_cluster_status_conditions,
    )
    return await write_status(ctx, status)


async def write_status_reason(ctx: ReconcileContext, reason: str) -> bool:
    """Sets ``status.reason`` (validation failures) and writes it if it changed.

    Raises:
        Conflict: the cached resourceVersion is stale; any other ApiError.
    """
    old = dict(ctx.cached.get("status") or {})
    if old.get("reason") == reason:
        return False
    status: dict[str, Any] = {**old, "reason": reason, "lastUpdateTime": format_time(ctx.now())}
    obj = ctx.copy_cached()
    obj["status"] = status
    await ctx.deps.client.update_status(RAY_CLUSTERS, obj)
    return True
