"""Points the RayService's head and serve Services at the cluster that is ready to serve.

The target is the pending cluster once its applications are all RUNNING, else the active
cluster if its applications are (KubeRay v1.7.0: ``reconcileServicesToReadyCluster`` in
``ray-operator/controllers/ray/rayservice_controller.go``); with neither ready, nothing is
created or changed, so the serve service never selects a cluster whose applications were not
seen RUNNING in this pass. A missing Service is created; an existing one is updated only when it
selects another cluster (selector, and ports if they differ; ClusterIP kept).

During an incremental upgrade (``UpgradeInProgress`` with NewClusterWithIncrementalUpgrade) the
head service stays on the active cluster: traffic moves through the HTTPRoute instead, and the
serve service of each cluster is its own ``<cluster>-serve-svc``
(:mod:`.incremental.routes`), so no ``<svc>-serve-svc`` is made.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.rayservice import service_builders as builders
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.incremental.mode import upgrading
from rayop.kube.errors import AlreadyExists
from rayop.kube.resources import SERVICES
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


def target_cluster(ctx: PassContext) -> str:
    """Returns the cluster the services should select now ("" when none is ready)."""
    if ctx.routes is not None:
        ready = {ctx.active_name, ctx.pending_name} & ctx.ready_clusters - {""}
        if not ready:
            return ""
        if ctx.pending_name in ready and not upgrading(ctx.status):
            return ctx.pending_name
        return ctx.active_name if ctx.cluster(ctx.active_name) is not None else ""
    for cluster_name in (ctx.pending_name, ctx.active_name):
        if cluster_name and cluster_name in ctx.ready_clusters:
            return cluster_name
    return ""


async def reconcile_services(ctx: PassContext) -> Stop | None:
    """Creates or retargets ``<svc>-head-svc`` and the serve service.

    Blocks on the create and update calls; never ends the pass.

    Raises:
        ServiceBuildError: the head container has no serve port.
        rayop.kube.errors.ApiError: a create or update failed.
    """
    serve_name = builders.serve_service_name(ctx.service)
    current = ctx.deps.services.get(ctx.namespace, serve_name)
    ctx.serving_cluster = builders.selected_cluster(current)
    target = target_cluster(ctx)
    cluster = ctx.cluster(target)
    if cluster is None:
        return None
    options = ctx.deps.options
    head = builders.build_rayservice_head_service(ctx.service, cluster, options=options)
    await _apply(ctx, head, target)
    if ctx.routes is None:
        serve = builders.build_rayservice_serve_service(ctx.service, cluster)
        await _apply(ctx, serve, target)
    ctx.serving_cluster = target
    ctx.services_reconciled = True
    return None


async def _apply(ctx: PassContext, desired: Mapping[str, Any], target: str) -> None:
    """Creates ``desired`` or retargets the existing Service to ``target``, with KubeRay's
    events (``CreatedService``/``FailedToCreateService``, ``UpdatedService``/
    ``FailedToUpdateService``)."""
    name = desired["metadata"]["name"]
    where = f"{ctx.namespace}/{name}"
    existing = ctx.deps.services.get(ctx.namespace, name)
    if existing is None:
        try:
            await write_with_events(
                ctx,
                ctx.deps.client.create(SERVICES, desired, namespace=ctx.namespace),
                action=settings.ACTION_CREATE,
                done=(settings.CREATED_SERVICE, f"Created the service {where}"),
                failed=(
                    settings.FAILED_TO_CREATE_SERVICE,
                    f"Failed to create the service {where}, ",
                ),
                passing=(AlreadyExists,),
            )
            return
        except AlreadyExists:
            existing = await ctx.deps.client.get(SERVICES, name, namespace=ctx.namespace)
    if builders.selected_cluster(existing) == target:
        return
    await write_with_events(
        ctx,
        ctx.deps.client.update(SERVICES, builders.retargeted(existing, desired)),
        action=settings.ACTION_UPDATE,
        done=(settings.UPDATED_SERVICE, f"Updated the service {where}"),
        failed=(settings.FAILED_TO_UPDATE_SERVICE, f"Failed to update the service {where}, "),
    )
    log.info("RayService %s: service %s now selects cluster %s", ctx.request, name, target)
