"""Steps that choose, create and update the active and pending RayClusters of a RayService.

``status.activeServiceStatus.rayClusterName`` serves traffic; ``pendingServiceStatus`` names
the cluster being prepared. A new pending name is written to status *before* the cluster is
created, so a failed status write (409) never leaves an unrecorded cluster behind, and a retry
creates the recorded one rather than another (KubeRay v1.7.0: ``reconcileRayCluster`` and
``shouldPrepareNewCluster`` in ``ray-operator/controllers/ray/rayservice_controller.go``).

A new pending cluster is prepared when there is no cluster at all, or when zero-downtime
upgrades are on and ``rayClusterConfig`` no longer matches the newest cluster (the pending one if
any, else the active one) by more than worker groups appended at the end; appended groups are
added to that cluster in place. If the spec goes back to the active cluster's during an upgrade,
the pending cluster is dropped (it is then retired like any other). An active cluster whose
``ray.io/kuberay-version`` is not ours is updated in place (spec, hash and version annotations)
rather than replaced, as KubeRay does for clusters an earlier operator version built (#2315).

With NewClusterWithIncrementalUpgrade (:mod:`.incremental`) a pending cluster is never replaced
or dropped by a spec change (a rollback moves traffic back first, and no new cluster is prepared
while it runs); a new pending cluster starts at ``targetCapacity`` 0 (100 when there is no
active cluster), and while an active cluster exists clusters are built with worker ``replicas``
unset.
"""

from __future__ import annotations

import logging

from rayop.controllers.kit.recorded_write import create_with_events, write_with_events
from rayop.controllers.rayservice import cluster_builders as rs_cluster
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.mode import (
    TARGET_CAPACITY,
    is_incremental,
    rolling_back,
)
from rayop.controllers.rayservice.status import ACTIVE, PENDING, write_status_if_changed
from rayop.kube.errors import NotFound
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


async def plan_clusters(ctx: PassContext) -> Stop | None:
    """Decides the pending cluster's name and writes it to status before anything is created.

    Blocks on the status write (and on a GET when the active cluster is missing from the
    cache); never ends the pass.

    Raises:
        rayop.kube.errors.ApiError: the status write failed (the pass is retried).
    """
    await _forget_missing_active(ctx)
    goal = rs_cluster.goal_spec(ctx.cached)
    active, pending = ctx.cluster(ctx.active_name), ctx.cluster(ctx.pending_name)
    new_name = ""
    incremental = is_incremental(ctx.spec, ctx.deps.options)
    if incremental and (rolling_back(ctx.status) or ctx.pending_name):
        pass
    elif not ctx.active_name and not ctx.pending_name:
        new_name = rs_cluster.new_cluster_name(ctx.name, ctx.deps.rng)
    elif ctx.pending_name and active is not None and rs_cluster.matches_goal(active, goal):
        log.info("RayService %s: spec is the active cluster's again; dropping pending", ctx.request)
        ctx.set_cluster_name(PENDING, "")
    elif rs_cluster.zero_downtime_enabled(ctx.spec, ctx.deps.options):
        newest = pending if ctx.pending_name else active
        if (
            newest is not None
            and not (newest is active and rs_cluster.built_by_other_version(newest))
            and not rs_cluster.matches_goal(newest, goal)
            and not rs_cluster.only_appended_worker_groups(newest, goal)
        ):
            new_name = rs_cluster.new_cluster_name(ctx.name, ctx.deps.rng)
    if new_name:
        log.info("RayService %s: preparing new cluster %s", ctx.request, new_name)
        ctx.set_cluster_name(PENDING, new_name)
        if incremental:
            first = not ctx.active_name
            ctx.status[PENDING][TARGET_CAPACITY] = 100 if first else 0
    await write_status_if_changed(ctx)
    return None


async def _forget_missing_active(ctx: PassContext) -> None:
    """Clears the active name when that cluster is gone from the API server (not just the cache)."""
    if not ctx.active_name or ctx.cluster(ctx.active_name) is not None:
        return
    try:
        await ctx.deps.client.get(RAY_CLUSTERS, ctx.active_name, namespace=ctx.namespace)
    except NotFound:
        log.info("RayService %s: active cluster %s is gone", ctx.request, ctx.active_name)
        ctx.set_cluster_name(ACTIVE, "")


async def ensure_clusters(ctx: PassContext) -> Stop | None:
    """Creates the pending cluster when missing; updates clusters in place where KubeRay does.

    In place: worker groups appended at the end (pending cluster, or the active one when no
    upgrade is under way), and an active cluster built by another KubeRay version when no
    upgrade is under way. Blocks on the create and update calls; never ends the pass.

    Raises:
        rayop.kube.errors.ApiError: a create or update failed.
    """
    goal = rs_cluster.goal_spec(ctx.cached)
    if ctx.pending_name and ctx.cluster(ctx.pending_name) is None:
        await _create(ctx, ctx.pending_name)
    upgrading = bool(ctx.pending_name)
    for cluster_name in (ctx.pending_name, "" if upgrading else ctx.active_name):
        cluster = ctx.cluster(cluster_name)
        if cluster is None:
            continue
        is_active = cluster_name == ctx.active_name
        other_version = is_active and rs_cluster.built_by_other_version(cluster)
        if other_version or rs_cluster.only_appended_worker_groups(cluster, goal):
            updated = rs_cluster.updated_in_place(
                cluster, ctx.service, goal, drop_worker_replicas=_drop_replicas(ctx)
            )
            which = "active" if is_active else "pending"
            where = f"{ctx.namespace}/{cluster_name}"
            await write_with_events(
                ctx,
                ctx.deps.client.update(RAY_CLUSTERS, updated),
                done=(settings.UPDATED_RAY_CLUSTER, f"Updated the {which} RayCluster {where}"),
                failed=(
                    settings.FAILED_TO_UPDATE_RAY_CLUSTER,
                    f"Failed to update the {which} RayCluster {where}: ",
                ),
            )
    return None


def _drop_replicas(ctx: PassContext) -> bool:
    """Tells whether clusters are built without worker replicas (incremental, active exists)."""
    return is_incremental(ctx.spec, ctx.deps.options) and bool(ctx.active_name)


async def _create(ctx: PassContext, cluster_name: str) -> None:
    goal = rs_cluster.goal_spec(ctx.cached)
    body = rs_cluster.build_ray_cluster(
        ctx.service, goal, cluster_name, drop_worker_replicas=_drop_replicas(ctx)
    )
    where = f"{ctx.namespace}/{cluster_name}"
    await create_with_events(
        ctx,
        ctx.deps.client.create(RAY_CLUSTERS, body, namespace=ctx.namespace),
        done=(settings.CREATED_RAY_CLUSTER, f"Created RayCluster {where}"),
        failed=(
            settings.FAILED_TO_CREATE_RAY_CLUSTER,
            f"Failed to create RayCluster {where}: ",
        ),
    )
