"""Deploys ``serveConfigV2`` to a cluster's dashboard and reads its applications back.

The target is the pending cluster when there is one, else the active cluster (KubeRay v1.7.0:
``reconcileServe`` in ``ray-operator/controllers/ray/rayservice_controller.go``). Its head must be
ready. The config (YAML converted to JSON, unchanged) is PUT only when the cache holds nothing for
the cluster, the cluster reports no applications (its head restarted without GCS fault tolerance),
or the config differs from the one last accepted; the cache is written only after a 2xx. During an
upgrade the active cluster is only read, so its status stays current. A cluster is *ready* when it
has at least one application and all are RUNNING; only ready clusters are ever selected by the
services.

NewClusterWithIncrementalUpgrade (:mod:`.incremental`) differs as KubeRay does: both clusters
are reconciled, the pending one first; the active cluster gets no new config while an upgrade
moves forward, the pending one none while it rolls back; a config PUT carries the cluster's
``targetCapacity`` from the status as ``target_capacity``; and while ``UpgradeInProgress`` is
True each cluster's capacity is then moved a step (:mod:`.incremental.target_capacity`).
"""

from __future__ import annotations

import logging
from typing import Any

import yaml

from rayop.controllers.dashboard.client import DashboardClient, DashboardError
from rayop.controllers.dashboard.models import ServeDetails
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.head_pods import dashboard, head_pod, is_pod_ready
from rayop.controllers.rayservice.incremental.mode import (
    ACTIVE,
    PENDING,
    TARGET_CAPACITY,
    entry,
    rolling_back,
    upgrading,
)
from rayop.controllers.rayservice.incremental.target_capacity import reconcile_target_capacity
from rayop.controllers.rayservice.status import application_statuses
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


def serve_config_json(text: str) -> dict[str, Any]:
    """Returns serveConfigV2 as the JSON body of PUT /api/serve/applications/.

    Raises:
        ValueError: the text is not a YAML mapping.
    """
    loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict):
        raise ValueError("serveConfigV2 is not a YAML mapping")
    return loaded


def needs_deploy(cached_config: str | None, config: str, details: ServeDetails) -> bool:
    """Tells whether the config must be PUT (nothing cached, no applications, or changed)."""
    return cached_config is None or not details.applications or cached_config != config


async def reconcile_serve(ctx: PassContext) -> Stop | None:
    """Deploys the serve config to the target cluster and records applications and readiness.

    Blocks on the dashboard calls; never ends the pass.

    Raises:
        DashboardError: the target's dashboard could not be read or refused the config.
    """
    if ctx.routes is not None:
        for cluster_name in (ctx.pending_name, ctx.active_name):
            if cluster_name:
                await _serve_cluster(ctx, cluster_name, deploy=_may_deploy(ctx, cluster_name))
        ctx.deps.serve_cache.prune(ctx.namespace, ctx.name, _named(ctx))
        return None
    target = ctx.pending_name or ctx.active_name
    if target:
        await _serve_cluster(ctx, target, deploy=True)
    if ctx.pending_name and ctx.active_name:
        try:
            await _serve_cluster(ctx, ctx.active_name, deploy=False)
        except DashboardError as exc:
            log.info("RayService %s: active cluster not readable: %s", ctx.request, exc)
    ctx.deps.serve_cache.prune(ctx.namespace, ctx.name, _named(ctx))
    return None


def _named(ctx: PassContext) -> list[str]:
    return [n for n in (ctx.active_name, ctx.pending_name) if n]


def _may_deploy(ctx: PassContext, cluster_name: str) -> bool:
    """Tells whether an incremental upgrade lets a new config reach ``cluster_name``."""
    if cluster_name == ctx.active_name:
        return not (upgrading(ctx.status) and not rolling_back(ctx.status))
    return not rolling_back(ctx.status)


def _target_capacity(ctx: PassContext, cluster_name: str) -> int | None:
    """Returns the status ``targetCapacity`` of ``cluster_name`` (incremental upgrade only)."""
    if ctx.routes is None:
        return None
    for which in (ACTIVE, PENDING):
        item = entry(ctx.status, which)
        if item.get("rayClusterName") == cluster_name and item.get(TARGET_CAPACITY) is not None:
            return int(item[TARGET_CAPACITY])
    return None


async def _serve_cluster(ctx: PassContext, cluster_name: str, *, deploy: bool) -> None:
    cluster = ctx.cluster(cluster_name)
    if cluster is None or not is_pod_ready(head_pod(ctx, cluster_name)):
        ctx.apps[cluster_name] = {}
        return
    async with dashboard(ctx, cluster) as client:
        details = await client.get_serve_details()
        if deploy and await _deploy_if_needed(ctx, client, cluster_name, details):
            details = await client.get_serve_details()
        if ctx.routes is not None and upgrading(ctx.status) and ctx.spec.serve_config_v2:
            config = serve_config_json(ctx.spec.serve_config_v2)
            await reconcile_target_capacity(ctx, client, cluster_name, config)
    ctx.apps[cluster_name] = application_statuses(details.applications)
    if details.all_running:
        ctx.ready_clusters.add(cluster_name)


async def _deploy_if_needed(
    ctx: PassContext, client: DashboardClient, cluster_name: str, details: ServeDetails
) -> bool:
    config = ctx.spec.serve_config_v2 or ""
    if not config:
        return False
    cache = ctx.deps.serve_cache
    if not needs_deploy(cache.get(ctx.namespace, ctx.name, cluster_name), config, details):
        return False
    try:
        body = serve_config_json(config)
        capacity = _target_capacity(ctx, cluster_name)
        if capacity is not None:
            body["target_capacity"] = capacity
        await client.update_deployments(body)
    except (DashboardError, ValueError) as exc:
        note = f"Failed to update serve applications of RayCluster {cluster_name}: {exc}"
        ctx.event("Warning", settings.FAILED_TO_UPDATE_SERVE_APPLICATIONS, note)
        raise
    cache.put(ctx.namespace, ctx.name, cluster_name, config)
    note = f"Updated serve applications of RayCluster {ctx.namespace}/{cluster_name}"
    ctx.event("Normal", settings.UPDATED_SERVE_APPLICATIONS, note)
    return True
