"""The steps of an incremental upgrade that read and write its Services, Gateway and HTTPRoute.

In KubeRay's order: :func:`read_routes` runs before Serve is reconciled (the capacity decision
reads the Gateway and route as they were), :func:`check_rollback` (in :mod:`.rollback`) after
the clusters, and :func:`reconcile_routes` after Serve: each cluster's own serve Service
(``<cluster>-serve-svc``, controlled by the cluster, created when missing), then the Gateway
(created, or updated when its class or listeners differ), then the HTTPRoute with the weights of
:func:`~.traffic.next_weights` (only once the active cluster exists). Events are KubeRay's:
``CreatedGateway``/``UpdatedGateway``/``FailedToCreateGateway``/``FailedToUpdateGateway``, the
same for ``HTTPRoute``. The Gateway API objects are read with GETs rather than an informer, so
an operator on a cluster without the Gateway API CRDs starts and serves every other strategy.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from rayop.api import keys
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.raycluster.builders import ServiceBuildError, service_ports
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import ServiceContext
from rayop.controllers.rayservice.incremental.gateway import (
    GATEWAYS,
    HTTP_ROUTES,
    build_gateway,
    build_route,
    cluster_serve_service_name,
    gateway_equal,
    gateway_name,
    route_equal,
    route_name,
)
from rayop.controllers.rayservice.incremental.mode import is_incremental, upgrade_options
from rayop.controllers.rayservice.incremental.state import RouteState
from rayop.controllers.rayservice.incremental.traffic import next_weights
from rayop.kube.errors import AlreadyExists, ApiError, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import SERVICES
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


async def _read(ctx: ServiceContext, res: Resource, name: str) -> tuple[Obj | None, str]:
    try:
        return await ctx.deps.client.get(res, name, namespace=ctx.namespace), ""
    except ApiError as exc:
        return None, str(exc)


async def read_routes(ctx: ServiceContext) -> Stop | None:
    """Reads the Gateway and HTTPRoute into ``ctx.routes``; blocks on two GETs."""
    if not is_incremental(ctx.spec, ctx.deps.options):
        return None
    gateway, gateway_error = await _read(ctx, GATEWAYS, gateway_name(ctx.name))
    route, route_error = await _read(ctx, HTTP_ROUTES, route_name(ctx.name))
    ctx.routes = RouteState(
        gateway=gateway, route=route, gateway_error=gateway_error, route_error=route_error
    )
    return None


def build_cluster_serve_service(ctx: ServiceContext, cluster: Obj) -> dict[str, Any]:
    """Returns ``<cluster>-serve-svc``: the cluster's pods with ``ray.io/serve=true``.

    Raises:
        ServiceBuildError: the head container has no ``serve``/``serve-*`` port.
    """
    meta = cluster["metadata"]
    cluster_name = str(meta["name"])
    ports = [
        {"name": n, "port": p}
        for n, p in sorted(service_ports(cluster).items())
        if n == "serve" or n.startswith("serve-")
    ]
    if not ports:
        raise ServiceBuildError(
            "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. "
            "'serve-grpc') in the Ray head container; otherwise, the Kubernetes service for "
            "Ray Serve will not be created."
        )
    spec: dict[str, Any] = {
        "selector": {keys.RAY_CLUSTER: cluster_name, settings.SERVE_LABEL: "true"},
        "ports": ports,
    }
    head_type = ctx.spec.ray_cluster_config.head_group_spec.service_type
    if head_type:
        spec["type"] = head_type
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": cluster_serve_service_name(cluster_name),
            "namespace": ctx.namespace,
            "labels": {
                settings.ORIGINATED_FROM_CR_NAME: cluster_name,
                settings.ORIGINATED_FROM_CRD: settings.OWNER_KIND,
                settings.SERVE_LABEL: f"{cluster_name}-serve",
            },
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": cluster_name,
                    "uid": str(meta.get("uid") or ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


async def _ensure_cluster_serve_service(ctx: ServiceContext, cluster_name: str) -> None:
    cluster = ctx.cluster(cluster_name)
    if cluster is None:
        return
    desired = build_cluster_serve_service(ctx, cluster)
    if ctx.deps.services.get(ctx.namespace, desired["metadata"]["name"]) is not None:
        return
    try:
        await ctx.deps.client.create(SERVICES, desired, namespace=ctx.namespace)
    except AlreadyExists:
        return
    log.info("RayService %s: created serve service %s", ctx.request, desired["metadata"]["name"])


def _failed(ctx: ServiceContext, reason: str, action: str, note: str) -> None:
    ctx.event("Warning", reason, note, action=action)


async def _reconcile_gateway(ctx: ServiceContext, routes: RouteState) -> None:
    options = upgrade_options(ctx.spec)
    desired = build_gateway(ctx.service, options.gateway_class_name)
    where = f"{ctx.namespace}/{desired['metadata']['name']}"
    existing = routes.gateway
    if existing is None:
        try:
            routes.gateway = await ctx.deps.client.create(
                GATEWAYS, desired, namespace=ctx.namespace
            )
        except Exception as exc:
            note = f"Failed to create Gateway for RayService {where}: {exc}"
            _failed(ctx, settings.FAILED_TO_CREATE_GATEWAY, settings.ACTION_CREATE, note)
            raise
        ctx.event(
            "Normal",
            settings.CREATED_GATEWAY,
            f"Created Gateway for RayService {where}",
            action=settings.ACTION_CREATE,
        )
        return
    if gateway_equal(existing, desired):
        return
    body = {**copy.deepcopy(dict(existing)), "spec": desired["spec"]}
    try:
        routes.gateway = await ctx.deps.client.update(GATEWAYS, body)
    except Exception as exc:
        note = f"Failed to update the Gateway {where}: {exc}"
        _failed(ctx, settings.FAILED_TO_UPDATE_GATEWAY, settings.ACTION_UPDATE, note)
        raise
    ctx.event(
        "Normal",
        settings.UPDATED_GATEWAY,
        f"Updated the Gateway {where}",
        action=settings.ACTION_UPDATE,
    )


def desired_route(ctx: ServiceContext) -> dict[str, Any] | None:
    """Returns the HTTPRoute this pass wants, or None while there is no active cluster."""
    active = ctx.cluster(ctx.active_name)
    if active is None:
        return None
    active_weight, pending_weight = next_weights(
        ctx.status,
        upgrade_options(ctx.spec),
        pending_ready=ctx.pending_name in ctx.ready_clusters,
        now=ctx.deps.clock.wall(),
    )
    backends: list[tuple[Obj, int]] = [(active, active_weight)]
    pending = ctx.cluster(ctx.pending_name)
    if pending is not None:
        backends.append((pending, pending_weight))
    return build_route(ctx.service, backends)


async def _reconcile_route(ctx: ServiceContext, routes: RouteState) -> None:
    desired = desired_route(ctx)
    if desired is None:
        routes.route = None
        return
    where = f"{ctx.namespace}/{desired['metadata']['name']}"
    existing = routes.route
    if existing is None:
        try:
            routes.route = await ctx.deps.client.create(
                HTTP_ROUTES, desired, namespace=ctx.namespace
            )
        except Exception as exc:
            note = f"Failed to create the HTTPRoute for RayService {where}: {exc}"
            _failed(ctx, settings.FAILED_TO_CREATE_HTTP_ROUTE, settings.ACTION_CREATE, note)
            raise
        ctx.event(
            "Normal",
            settings.CREATED_HTTP_ROUTE,
            f"Created HTTPRoute for RayService {where}",
            action=settings.ACTION_CREATE,
        )
        return
    if route_equal(existing, desired):
        return
    body = {**copy.deepcopy(dict(existing)), "spec": desired["spec"]}
    try:
        routes.route = await ctx.deps.client.update(HTTP_ROUTES, body)
    except Exception as exc:
        note = f"Failed to update the HTTPRoute {where}: {exc}"
        _failed(ctx, settings.FAILED_TO_UPDATE_HTTP_ROUTE, settings.ACTION_UPDATE, note)
        raise
    ctx.event(
        "Normal",
        settings.UPDATED_HTTP_ROUTE,
        f"Updated the HTTPRoute {where}",
        action=settings.ACTION_UPDATE,
    )


async def reconcile_routes(ctx: ServiceContext) -> Stop | None:
    """Ensures the per-cluster serve Services, the Gateway and the HTTPRoute; never ends the pass.

    Raises:
        rayop.kube.errors.ApiError: a create or update failed (the pass is retried).
    """
    routes = ctx.routes
    if routes is None:
        return None
    for cluster_name in (ctx.active_name, ctx.pending_name):
        await _ensure_cluster_serve_service(ctx, cluster_name)
    await _reconcile_gateway(ctx, routes)
    await _reconcile_route(ctx, routes)
    return None


async def delete_routes(ctx: ServiceContext) -> bool:
    """Deletes the Gateway and HTTPRoute of a suspending RayService; returns whether any remained.

    Raises:
        rayop.kube.errors.ApiError: a read or delete failed.
    """
    if not is_incremental(ctx.spec, ctx.deps.options):
        return False
    remaining = False
    for res, name, kind, failed, deleted in (
        (
            GATEWAYS,
            gateway_name(ctx.name),
            "Gateway",
            settings.FAILED_TO_DELETE_GATEWAY,
            settings.DELETED_GATEWAY,
        ),
        (
            HTTP_ROUTES,
            route_name(ctx.name),
            "HTTPRoute",
            settings.FAILED_TO_DELETE_HTTP_ROUTE,
            settings.DELETED_HTTP_ROUTE,
        ),
    ):
        try:
            current = await ctx.deps.client.get(res, name, namespace=ctx.namespace)
        except NotFound:
            continue
        remaining = True
        if (current.get("metadata") or {}).get("deletionTimestamp"):
            continue
        where = f"{ctx.namespace}/{name}"
        try:
            await ctx.deps.client.delete(
                res, name, namespace=ctx.namespace, propagation_policy="Background"
            )
        except NotFound:
            continue
        except Exception as exc:
            note = f"Failed to delete the {kind} {where} during suspend: {exc}"
            _failed(ctx, failed, settings.ACTION_DELETE, note)
            raise
        ctx.event(
            "Normal",
            deleted,
            f"Deleted the {kind} {where} during suspend",
            action=settings.ACTION_DELETE,
        )
    return remaining
