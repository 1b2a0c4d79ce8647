"""The OpenShift Route to the head's dashboard, exactly as KubeRay v1.7.0 makes it.

KubeRay asks the API server once at startup whether it is OpenShift: any of the API groups
``route.openshift.io``, ``security.openshift.io`` or ``config.openshift.io`` served
(:func:`is_openshift_cluster`; an answer it cannot get stops the operator). On OpenShift, unless
``USE_INGRESS_ON_OPENSHIFT=true``, a RayCluster with ``headGroupSpec.enableIngress`` gets a
``route.openshift.io/v1`` Route instead of the head Ingress (:func:`reconcile_route`):

- named ``<cluster>-head-route``, cut to ``51 - len(namespace)`` characters (the router's host
  is ``<name>-<namespace>`` within a 63-character DNS label) then KubeRay's ``CheckName``;
- labelled ``ray.io/cluster``, ``ray.io/identifier=<cluster>-head`` and KubeRay's
  ``app.kubernetes.io`` name and created-by; annotated with a copy of every annotation of the
  RayCluster;
- ``spec.to`` the head service (weight 100), ``spec.port.targetPort`` the head's ``dashboard``
  container port (8265 by default), ``wildcardPolicy: None``; controlled by the RayCluster.

The Route is created when the cluster has none (any Route labelled ``ray.io/cluster=<cluster>``
counts) and never updated afterwards, as KubeRay does (Normal ``CreatedRoute``, or Warning
``FailedToCreateRoute`` and the error).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from rayop.api import keys
from rayop.api.raycluster import RayCluster
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster import services
from rayop.controllers.raycluster.context import PassContext
from rayop.controllers.raycluster.pods import owner_reference
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists
from rayop.kube.resource import Resource
from rayop.runtime.steps import Stop

__all__ = [
    "OPENSHIFT_API_GROUPS",
    "ROUTES",
    "OpenShiftDetectionError",
    "build_head_route",
    "is_openshift_cluster",
    "reconcile_route",
    "route_name",
    "uses_route",
]

ROUTES: Final = Resource("route.openshift.io", "v1", "routes", "Route")
OPENSHIFT_API_GROUPS: Final = ("route.openshift.io", "security.openshift.io", "config.openshift.io")
CREATED_ROUTE: Final = "CreatedRoute"
FAILED_TO_CREATE_ROUTE: Final = "FailedToCreateRoute"
DEFAULT_DASHBOARD_PORT: Final = 8265


class OpenShiftDetectionError(Exception):
    """The API server's groups could not be read, so the cluster type is unknown."""


async def is_openshift_cluster(client: KubeClient) -> bool:
    """Tells whether the API server serves an OpenShift API group (KubeRay's ``IsOpenShiftCluster``).

    Raises:
        OpenShiftDetectionError: the group list could not be read (KubeRay then exits, since
            whether to make Routes or Ingresses depends on the answer).
    """
    try:
        status, body = await client.request("GET", "/apis")
    except Exception as err:
        raise OpenShiftDetectionError(f"failed to retrieve server API groups: {err}") from err
    if status != 200:
        raise OpenShiftDetectionError(f"failed to retrieve server API groups: HTTP {status}")
    try:
        groups = json.loads(body).get("groups") or []
    except (ValueError, AttributeError) as err:
        raise OpenShiftDetectionError(f"failed to retrieve server API groups: {err}") from err
    return any(isinstance(g, dict) and g.get("name") in OPENSHIFT_API_GROUPS for g in groups)


def uses_route(options: OperatorOptions) -> bool:
    """Tells whether ``enableIngress`` makes a Route rather than an Ingress."""
    return options.is_openshift and not options.use_ingress_on_openshift


def route_name(cluster_name: str, namespace: str) -> str:
    """Returns the Route's name (KubeRay's ``GenerateRouteName`` then ``CheckRouteName``)."""
    name = f"{cluster_name}-head-route"
    max_length = 51 - len(namespace)
    if len(name) > max_length:
        name = name[: max(max_length, 0)]
    return names.check_name(name)


def build_head_route(rc: RayCluster) -> dict[str, Any]:
    """Returns the head Route KubeRay would create for ``rc`` (without the owner reference)."""
    namespace = cs.cluster_namespace(rc)
    port = services.service_ports(rc).get("dashboard", DEFAULT_DASHBOARD_PORT)
    return {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {
            "name": route_name(rc.name, namespace),
            "namespace": namespace,
            "labels": {
                keys.RAY_CLUSTER: rc.name,
                keys.RAY_IDENTIFIER: names.identifier(rc.name, labels.HEAD),
                keys.APP_NAME: labels.APP_NAME_VALUE,
                keys.APP_CREATED_BY: labels.CREATED_BY_VALUE,
            },
            "annotations": copy.deepcopy(dict(rc.metadata.get("annotations") or {})),
        },
        "spec": {
            "to": {"kind": "Service", "name": names.head_service_name(rc), "weight": 100},
            "port": {"targetPort": port},
            "wildcardPolicy": "None",
        },
    }


async def reconcile_route(ctx: PassContext) -> Stop | None:
    """Creates the head Route when the cluster asks for ingress on OpenShift and has none.

    Raises:
        ApiError: the create failed (but AlreadyExists: the cache only lagged).
    """
    rc = ctx.rc
    if not rc.spec.head_group_spec.enable_ingress or not uses_route(ctx.deps.options):
        return None
    routes = ctx.deps.informers.informer(ROUTES)
    if routes.list(ctx.namespace, label_selector={keys.RAY_CLUSTER: rc.name}):
        return None
    route = build_head_route(rc)
    route["metadata"]["ownerReferences"] = [owner_reference(rc)]
    where = f"{ctx.namespace}/{route['metadata']['name']}"
    try:
        await ctx.deps.client.create(ROUTES, route, namespace=ctx.namespace)
    except AlreadyExists:
        return None
    except Exception as err:
        note = f"Failed creating route {where}, {err}"
        ctx.event("Warning", FAILED_TO_CREATE_ROUTE, note, action=ev.ACTION_CREATE)
        raise
    ctx.event("Normal", CREATED_ROUTE, f"Created route {where}", action=ev.ACTION_CREATE)
    return None
