"""The Gateway API objects of an incremental upgrade: builders, equality, readiness, weights.

As KubeRay v1.7 builds them:

* ``<svc>-gateway`` (``gateway.networking.k8s.io/v1`` Gateway): ``gatewayClassName`` from
  ``clusterUpgradeOptions``, one listener ``http``, protocol ``HTTP``, port 80;
* ``<svc>-httproute``: one parentRef (the Gateway, with its namespace) and one rule matching
  path prefix ``/`` with a backendRef per cluster (``<cluster>-serve-svc``, the head's ``serve``
  port, 8000 by default, and the cluster's weight), the active cluster first.

Both are controlled by the RayService. Equality compares only the fields the controller sets
(an API server or Gateway implementation adds defaults: ``group``, ``kind``, ...), and a Gateway
or route is *ready* only when its implementation says so: Gateway ``Accepted`` and
``Programmed``, route parent ``Accepted`` and ``ResolvedRefs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rayop.api.conditions import is_condition_true
from rayop.api.rayservice import RayService
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit import names
from rayop.controllers.kit.ownership import controller_reference
from rayop.controllers.raycluster.builders import service_ports
from rayop.kube.resource import Resource

GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway")
HTTP_ROUTES = Resource("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute")
LISTENER_NAME = "http"
LISTENER_PORT = 80
DEFAULT_SERVE_PORT = 8000


def gateway_name(service_name: str) -> str:
    """Returns ``<rayservice>-gateway``."""
    return f"{service_name}-gateway"


def route_name(service_name: str) -> str:
    """Returns ``<rayservice>-httproute``."""
    return f"{service_name}-httproute"


def cluster_serve_service_name(cluster_name: str) -> str:
    """Returns a cluster's own serve Service, ``<cluster>-serve-svc``."""
    return names.serve_service_name(cluster_name)


def serve_port(cluster: Obj) -> int:
    """Returns the head container's ``serve`` port (8000 when it names none)."""
    return int(service_ports(cluster).get("serve", DEFAULT_SERVE_PORT))


def build_gateway(service: RayService, gateway_class_name: str) -> dict[str, Any]:
    """Returns the RayService's Gateway."""
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {
            "name": gateway_name(service.name),
            "namespace": service.namespace,
            "ownerReferences": [controller_reference(service)],
        },
        "spec": {
            "gatewayClassName": gateway_class_name,
            "listeners": [{"name": LISTENER_NAME, "protocol": "HTTP", "port": LISTENER_PORT}],
        },
    }


def backend_ref(cluster: Obj, namespace: str, weight: int) -> dict[str, Any]:
    """Returns the weighted backendRef of one cluster's serve Service."""
    return {
        "name": cluster_serve_service_name(str(cluster["metadata"]["name"])),
        "namespace": namespace,
        "port": serve_port(cluster),
        "weight": weight,
    }


def build_route(service: RayService, backends: Sequence[tuple[Obj, int]]) -> dict[str, Any]:
    """Returns the RayService's HTTPRoute over ``backends`` (cluster, weight), active first."""
    namespace = service.namespace
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {
            "name": route_name(service.name),
            "namespace": namespace,
            "ownerReferences": [controller_reference(service)],
        },
        "spec": {
            "parentRefs": [{"name": gateway_name(service.name), "namespace": namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [backend_ref(c, namespace, w) for c, w in backends],
                }
            ],
        },
    }


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def gateway_equal(existing: Obj, desired: Obj) -> bool:
    """Tells whether the Gateway's class and listeners (name, protocol, port) are the desired."""
    mine, goal = _spec(existing), _spec(desired)
    if mine.get("gatewayClassName") != goal.get("gatewayClassName"):
        return False
    keys = ("name", "protocol", "port")
    have = [tuple(item.get(k) for k in keys) for item in mine.get("listeners") or []]
    want = [tuple(item.get(k) for k in keys) for item in goal.get("listeners") or []]
    return have == want


def _path_matches(rule: Obj) -> list[Any]:
    result = []
    for match in rule.get("matches") or []:
        path = match.get("path") or {}
        result.append((path.get("type"), path.get("value"), bool(match.get("headers"))))
    return result


def _backend_key(ref: Obj) -> tuple[Any, ...]:
    weight = ref.get("weight")
    return (
        ref.get("name"),
        ref.get("namespace") or "",
        1 if weight is None else weight,
        ref.get("port") or 0,
    )


def route_equal(existing: Obj, desired: Obj) -> bool:
    """Tells whether the route's hostnames, parentRefs, matches, filters and backendRefs
    (name, namespace, port, weight) are the desired ones."""
    mine, goal = _spec(existing), _spec(desired)
    if list(mine.get("hostnames") or []) != list(goal.get("hostnames") or []):
        return False
    parents = [(p.get("name"), p.get("namespace") or "") for p in mine.get("parentRefs") or []]
    wanted = [(p.get("name"), p.get("namespace") or "") for p in goal.get("parentRefs") or []]
    if parents != wanted:
        return False
    rules, goal_rules = list(mine.get("rules") or []), list(goal.get("rules") or [])
    if len(rules) != len(goal_rules):
        return False
    for rule, goal_rule in zip(rules, goal_rules, strict=True):
        if _path_matches(rule) != _path_matches(goal_rule):
            return False
        if list(rule.get("filters") or []) != list(goal_rule.get("filters") or []):
            return False
        have = [_backend_key(r) for r in rule.get("backendRefs") or []]
        want = [_backend_key(r) for r in goal_rule.get("backendRefs") or []]
        if have != want:
            return False
    return True


def gateway_ready(gateway: Obj | None) -> bool:
    """Tells whether the Gateway is ``Accepted`` and ``Programmed``."""
    if gateway is None:
        return False
    conditions = (gateway.get("status") or {}).get("conditions") or []
    return is_condition_true(conditions, "Accepted") and is_condition_true(conditions, "Programmed")


def route_ready(gateway: Obj, route: Obj | None) -> bool:
    """Tells whether the route's status entry for the Gateway is ``Accepted`` and
    ``ResolvedRefs``."""
    if route is None:
        return False
    meta = gateway.get("metadata") or {}
    for parent in (route.get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != meta.get("name"):
            continue
        if ref.get("namespace") is not None and ref.get("namespace") != meta.get("namespace"):
            continue
        conditions = parent.get("conditions") or []
        if is_condition_true(conditions, "Accepted") and is_condition_true(
            conditions, "ResolvedRefs"
        ):
            return True
    return False


def route_weights(route: Obj | None, active: str, pending: str) -> tuple[int, int]:
    """Returns the (active, pending) weights of the route's first rule; -1 where absent.

    A backendRef counts for a cluster when its name contains the cluster's name, as in KubeRay.
    """
    active_weight = pending_weight = -1
    rules = _spec(route or {}).get("rules") or []
    if not rules:
        return active_weight, pending_weight
    for ref in rules[0].get("backendRefs") or []:
        name = str(ref.get("name") or "")
        weight = int(ref.get("weight") or 0)
        if active and active in name:
            active_weight = weight
        if pending and pending in name:
            pending_weight = weight
    return active_weight, pending_weight
