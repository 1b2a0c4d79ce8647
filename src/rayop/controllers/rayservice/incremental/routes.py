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

import contextlib
import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rayop.api import keys
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit.ownership import uid_precondition
from rayop.controllers.kit.recorded_write import write_with_events
from rayop.controllers.raycluster.builders import ServiceBuildError, service_ports
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.context import PassContext
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
from rayop.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import SERVICES
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


async def _read(ctx: PassContext, res: Resource, name: str) -> tuple[Obj | None, str]:
    try:
        return await ctx.deps.client.get(res, name, namespace=ctx.namespace), ""
    except ApiError as exc:
        return None, str(exc)


async def read_routes(ctx: PassContext) -> Stop | None:
    """Reads the Gateway and HTTPRoute into ``ctx.routes``; blocks on two GETs."""
    if not is_incremental(ctx.spec, ctx.deps.options):
        return None
    gateway, gateway_error = await _read(ctx, GATEWAYS, gateway_name(ctx.name))
    route, route_error = await _read(ctx, HTTP_ROUTES, route_name(ctx.name))
    ctx.routes = RouteState(
        gateway=gateway, route=route, gateway_error=gateway_error, route_error=route_error
    )
    return None


def build_cluster_serve_service(ctx: PassContext, cluster: Obj) -> dict[str, Any]:
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


async def _ensure_cluster_serve_service(ctx: PassContext, cluster_name: str) -> None:
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


@dataclass(frozen=True)
class _RouteObject:
    """The Gateway or the HTTPRoute: how it is named and compared, and KubeRay's event reasons."""

    res: Resource
    name: Callable[[str], str]
    """The object's name from the RayService's."""
    equal: Callable[[Obj, Obj], bool]
    reasons: Mapping[str, tuple[str, str]]
    """The (Normal, Warning) event reasons of each action (Create, Update, Delete)."""
    create_failure_names: str
    """What KubeRay's FailedToCreate note calls it ("Gateway", but "the HTTPRoute")."""


_GATEWAY = _RouteObject(GATEWAYS, gateway_name, gateway_equal, settings.GATEWAY_REASONS, "Gateway")
_HTTP_ROUTE = _RouteObject(
    HTTP_ROUTES, route_name, route_equal, settings.HTTP_ROUTE_REASONS, "the HTTPRoute"
)


async def _apply(
    ctx: PassContext, target: _RouteObject, existing: Obj | None, desired: dict[str, Any]
) -> Obj:
    """Creates ``desired``, or updates ``existing`` to its spec when they differ; returns the
    object as it now is."""
    kind = target.res.kind
    where = f"{ctx.namespace}/{desired['metadata']['name']}"
    if existing is None:
        created, failed_to_create = target.reasons[settings.ACTION_CREATE]
        failed_note = f"Failed to create {target.create_failure_names} for RayService {where}: "
        return await write_with_events(
            ctx,
            ctx.deps.client.create(target.res, desired, namespace=ctx.namespace),
            action=settings.ACTION_CREATE,
            done=(created, f"Created {kind} for RayService {where}"),
            failed=(failed_to_create, failed_note),
        )
    if target.equal(existing, desired):
        return existing
    updated, failed_to_update = target.reasons[settings.ACTION_UPDATE]
    body = {**copy.deepcopy(dict(existing)), "spec": desired["spec"]}
    return await write_with_events(
        ctx,
        ctx.deps.client.update(target.res, body),
        action=settings.ACTION_UPDATE,
        done=(updated, f"Updated the {kind} {where}"),
        failed=(failed_to_update, f"Failed to update the {kind} {where}: "),
    )


def desired_route(ctx: PassContext) -> dict[str, Any] | None:
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


async def reconcile_routes(ctx: PassContext) -> Stop | None:
    """Ensures the per-cluster serve Services, the Gateway and the HTTPRoute; never ends the pass.

    Raises:
        rayop.kube.errors.ApiError: a create or update failed (the pass is retried).
    """
    routes = ctx.routes
    if routes is None:
        return None
    for cluster_name in (ctx.active_name, ctx.pending_name):
        await _ensure_cluster_serve_service(ctx, cluster_name)
    gateway = build_gateway(ctx.service, upgrade_options(ctx.spec).gateway_class_name)
    routes.gateway = await _apply(ctx, _GATEWAY, routes.gateway, gateway)
    route = desired_route(ctx)
    routes.route = None if route is None else await _apply(ctx, _HTTP_ROUTE, routes.route, route)
    return None


async def delete_routes(ctx: PassContext) -> bool:
    """Deletes the Gateway and HTTPRoute of a suspending RayService; returns whether any remained.

    Raises:
        rayop.kube.errors.ApiError: a read or delete failed.
    """
    if not is_incremental(ctx.spec, ctx.deps.options):
        return False
    remaining = False
    for target in (_GATEWAY, _HTTP_ROUTE):
        name = target.name(ctx.name)
        try:
            current = await ctx.deps.client.get(target.res, name, namespace=ctx.namespace)
        except NotFound:
            continue
        remaining = True
        if (current.get("metadata") or {}).get("deletionTimestamp"):
            continue
        kind = target.res.kind
        where = f"{ctx.namespace}/{name}"
        deleted, failed_to_delete = target.reasons[settings.ACTION_DELETE]
        delete = ctx.deps.client.delete(
            target.res, name, namespace=ctx.namespace, propagation_policy="Background",
            preconditions=uid_precondition(current),
        )  # fmt: skip
        with contextlib.suppress(NotFound):
            await write_with_events(
                ctx,
                delete,
                action=settings.ACTION_DELETE,
                done=(deleted, f"Deleted the {kind} {where} during suspend"),
                failed=(failed_to_delete, f"Failed to delete the {kind} {where} during suspend: "),
                passing=(NotFound, Conflict),
            )
    return remaining
