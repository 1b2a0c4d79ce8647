"""Deploys ``serveConfigV2`` to a cluster's dashboard and reads its applications back.

The target is the pending cluster when there is one, else the active cluster (kuberay-v1.md §6
step 11). Its head must be ready. The config (YAML converted to JSON, unchanged) is PUT only
when the cache holds nothing for the cluster, the cluster reports no applications (its head
restarted without GCS fault tolerance), or the config differs from the one last accepted; the
cache is written only after a 2xx. During an upgrade the active cluster is only read, so its
status stays current. A cluster is *ready* when it has at least one application and all are
RUNNING; only ready clusters are ever selected by the services.
"""

from __future__ import annotations

import logging
from typing import Any

import yaml

from rayop.controllers.dashboard.client import DashboardClient, DashboardError
from rayop.controllers.dashboard.models import ServeDetails
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import ServiceContext
from rayop.controllers.rayservice.head_pods import dashboard, head_pod, is_pod_ready
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


async def reconcile_serve(ctx: ServiceContext) -> Stop | None:
    """Deploys the serve config to the target cluster and records applications and readiness.

    Blocks on the dashboard calls; never ends the pass.

    Raises:
        DashboardError: the target's dashboard could not be read or refused the config.
    """
    target = ctx.pending_name or ctx.active_name
    if target:
        await _serve_cluster(ctx, target, deploy=True)
    if ctx.pending_name and ctx.active_name:
        try:
            await _serve_cluster(ctx, ctx.active_name, deploy=False)
        except DashboardError as exc:
            log.info("RayService %s: active cluster not readable: %s", ctx.request, exc)
    keep = [n for n in (ctx.active_name, ctx.pending_name) if n]
    ctx.deps.serve_cache.prune(ctx.namespace, ctx.name, keep)
    return None


async def _serve_cluster(ctx: ServiceContext, cluster_name: str, *, deploy: bool) -> None:
    cluster = ctx.cluster(cluster_name)
    if cluster is None or not is_pod_ready(head_pod(ctx, cluster_name)):
        ctx.apps[cluster_name] = {}
        return
    async with dashboard(ctx, cluster) as client:
        details = await client.get_serve_details()
        if deploy and await _deploy_if_needed(ctx, client, cluster_name, details):
            details = await client.get_serve_details()
    ctx.apps[cluster_name] = application_statuses(details.applications)
    if details.all_running:
        ctx.ready_clusters.add(cluster_name)


async def _deploy_if_needed(
    ctx: ServiceContext, client: DashboardClient, cluster_name: str, details: ServeDetails
) -> bool:
    config = ctx.spec.serve_config_v2 or ""
    if not config:
        return False
    cache = ctx.deps.serve_cache
    if not needs_deploy(cache.get(ctx.namespace, ctx.name, cluster_name), config, details):
        return False
    try:
        await client.update_deployments(serve_config_json(config))
    except (DashboardError, ValueError) as exc:
        note = f"Failed to update serve applications of RayCluster {cluster_name}: {exc}"
        ctx.event("Warning", settings.FAILED_TO_UPDATE_SERVE_APPLICATIONS, note)
        raise
    cache.put(ctx.namespace, ctx.name, cluster_name, config)
    note = f"Updated serve applications of RayCluster {ctx.namespace}/{cluster_name}"
    ctx.event("Normal", settings.UPDATED_SERVE_APPLICATIONS, note)
    return True
