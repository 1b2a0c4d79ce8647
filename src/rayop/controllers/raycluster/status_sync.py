"""The status step of a RayCluster reconcile: compute from the cache, write only on change.

KubeRay's ``calculateStatus`` + ``updateRayClusterStatus``
(``ray-operator/controllers/ray/raycluster_controller.go``, v1.7.0): the new status is computed from
the cached pods and services; it is written with a full-object update of the ``/status`` subresource
carrying the cached resourceVersion, and only when :func:`status_changed` says so. A 409 is not
retried here: it propagates, the controller requeues with backoff, and the next pass recomputes from
the newer cached object.

Beyond KubeRay: while the cache has not yet shown this controller's own last status write (see
:class:`~rayop.runtime.own_writes.OwnWrites`), a write is not attempted at all, since it could
only fail with 409; the pass reports the status as still to be written (so it requeues after
2 s), and the cluster is enqueued again as soon as the cache shows that write.
"""

from __future__ import annotations

from typing import Any

from rayop.api.common import format_time
from rayop.controllers.raycluster.context import PassContext
from rayop.controllers.raycluster.status import calculate_status, status_changed
from rayop.kube.resources import RAY_CLUSTERS


async def write_status(ctx: PassContext, status: dict[str, Any]) -> bool:
    """Writes ``status`` through ``/status`` if it differs from the cached one; returns whether
    it changed (written now, or deferred because the cache is behind our last write). Blocks on
    the API.

    Raises:
        Conflict: the cached resourceVersion is stale; any other ApiError.
    """
    if not status_changed(ctx.cached.get("status"), status):
        return False
    await _put_status(ctx, status)
    return True


async def _put_status(ctx: PassContext, status: dict[str, Any]) -> bool:
    """Writes ``status`` unless the cache has not yet shown our previous write; returns whether
    it wrote."""
    if ctx.deps.own_writes.cache_behind(ctx.cached):
        return False
    obj = ctx.copy_cached()
    obj["status"] = status
    written = await ctx.deps.client.update_status(RAY_CLUSTERS, obj)
    ctx.deps.own_writes.record(written)
    return True


async def sync_status(ctx: PassContext, reconcile_error: BaseException | None) -> bool:
    """Computes the status from the caches and writes it when changed; returns whether it wrote.

    Raises:
        StatusUnavailableError: the status cannot be computed yet (no head service...).
        Conflict: the status write lost a race; any other ApiError.
    """
    status = calculate_status(
        ctx.rc,
        ctx.cached.get("status"),
        ctx.cluster_pods(),
        ctx.owned_services(),
        now=format_time(ctx.now),
        reconcile_error=reconcile_error,
        status_conditions_gate=ctx.deps.options.feature_gates.ray_cluster_status_conditions,
    )
    return await write_status(ctx, status)


async def write_status_reason(ctx: PassContext, reason: str) -> bool:
    """Sets ``status.reason`` (validation failures), writing it if it changed; returns False when
    the write had to wait for the cache to show our previous one (requeue soon), else True.

    Raises:
        Conflict: the cached resourceVersion is stale; any other ApiError.
    """
    old = dict(ctx.cached.get("status") or {})
    if old.get("reason") == reason:
        return True
    status: dict[str, Any] = {**old, "reason": reason, "lastUpdateTime": format_time(ctx.now)}
    return await _put_status(ctx, status)
