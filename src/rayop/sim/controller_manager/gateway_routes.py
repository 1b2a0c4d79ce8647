"""The embedded Gateway implementation's view of an HTTPRoute: attachment and references.

For each ``parentRef`` naming a Gateway of the implementation, :func:`attach` decides
``Accepted`` as the Gateway API specifies: the listeners the ref selects (``sectionName``,
``port``; none: ``NoMatchingParent``), of those the ones that allow the route (``allowedRoutes``:
kind ``HTTPRoute``, namespaces ``Same``, ``All`` or a ``Selector`` on the route's namespace's
labels; none: ``NotAllowedByListeners``) and whose hostname intersects the route's hostnames
(none: ``NoMatchingListenerHostname``). The route then counts in those listeners'
``attachedRoutes``.

:func:`resolve_backends` decides ``ResolvedRefs`` once per route: every ``backendRef`` must be a
core Service (``InvalidKind``) that exists (``BackendNotFound``), in the route's namespace or
allowed by a ReferenceGrant of its own (``RefNotPermitted``). The weights are not judged: traffic
splits as ``backendRefs[].weight`` says.

:func:`route_parents` merges the implementation's entries into ``status.parents``, leaving the
entries of other controllers alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.gateway_api import (
    CONTROLLER_NAME,
    GROUP,
    condition,
    core_reference,
    keep_transition_times,
)
from rayop.sim.controller_manager.gateway_listeners import ROUTE_KIND, Listener, Verdict

ObjectLookup = Callable[[str, str], Obj | None]
GrantLookup = Callable[[str], Iterable[Obj]]
LabelLookup = Callable[[str], Mapping[str, str]]


def gateway_key(route_namespace: str, ref: Mapping[str, Any]) -> tuple[str, str] | None:
    """Returns the (namespace, name) of the Gateway a parentRef names, None for other kinds."""
    if (ref.get("group") or GROUP) != GROUP or (ref.get("kind") or "Gateway") != "Gateway":
        return None
    return str(ref.get("namespace") or route_namespace), str(ref.get("name") or "")


def _host_matches(listener: str, route: str) -> bool:
    if listener == route:
        return True
    if listener.startswith("*."):
        suffix = listener[1:]
        return route.endswith(suffix) and route != suffix[1:]
    if route.startswith("*."):
        suffix = route[1:]
        return listener.endswith(suffix) and listener != suffix[1:]
    return False


def _hostnames_intersect(listener: str, hostnames: list[str]) -> bool:
    return not listener or not hostnames or any(_host_matches(listener, h) for h in hostnames)


def _allows_namespace(
    li: Listener, gateway_namespace: str, route_namespace: str, labels: LabelLookup
) -> bool:
    if li.allowed_from == "All":
        return True
    if li.allowed_from == "Selector":
        return li.selector is not None and li.selector.matches(labels(route_namespace))
    return route_namespace == gateway_namespace


def attach(
    route: Obj,
    ref: Mapping[str, Any],
    gateway_namespace: str,
    listeners: list[Listener],
    labels: LabelLookup,
) -> tuple[Verdict, list[Listener]]:
    """Returns the ``Accepted`` verdict of one parentRef and the listeners the route attaches to."""
    route_ns = str(route["metadata"].get("namespace") or "")
    section, port = ref.get("sectionName"), ref.get("port")
    chosen = [
        li
        for li in listeners
        if li.usable
        and (section is None or li.name == section)
        and (port is None or li.port == int(port))
    ]
    if not chosen:
        return (False, "NoMatchingParent", "no usable listener matches the parentRef"), []
    chosen = [
        li
        for li in chosen
        if any(k["kind"] == ROUTE_KIND for k in li.kinds)
        and _allows_namespace(li, gateway_namespace, route_ns, labels)
    ]
    if not chosen:
        return (False, "NotAllowedByListeners", "no listener allows this route"), []
    hostnames = [str(h) for h in (route.get("spec") or {}).get("hostnames") or []]
    chosen = [li for li in chosen if _hostnames_intersect(li.hostname, hostnames)]
    if not chosen:
        return (False, "NoMatchingListenerHostname", "no listener hostname matches"), []
    return (True, "Accepted", "Route is accepted"), chosen


def backend_refs(route: Obj) -> list[Mapping[str, Any]]:
    """Returns every ``backendRef`` of the route's rules."""
    refs: list[Mapping[str, Any]] = []
    for rule in (route.get("spec") or {}).get("rules") or []:
        refs.extend(r for r in rule.get("backendRefs") or [] if isinstance(r, Mapping))
    return refs


def resolve_backends(route: Obj, service: ObjectLookup, grants: GrantLookup) -> Verdict:
    """Returns the route's ``ResolvedRefs`` verdict (see the module)."""
    route_ns = str(route["metadata"].get("namespace") or "")
    for ref in backend_refs(route):
        where, name, problem = core_reference(
            ref, from_kind=ROUTE_KIND, from_namespace=route_ns, to_kind="Service", grants=grants
        )
        if problem == "kind":
            return False, "InvalidKind", f"backend {name} is not a Service"
        if problem == "grant":
            return False, "RefNotPermitted", f"no ReferenceGrant allows Service {where}/{name}"
        if service(where, name) is None:
            return False, "BackendNotFound", f"Service {where}/{name} not found"
    return True, "ResolvedRefs", "All references are resolved"


def parent_entry(
    route: Obj, ref: Mapping[str, Any], accepted: Verdict, resolved: Verdict, now: str
) -> dict[str, Any]:
    """Returns the route's ``status.parents`` entry of the implementation for one parentRef."""
    generation = route["metadata"].get("generation")
    echoed = {"group": GROUP, "kind": "Gateway", **dict(ref)}
    return {
        "parentRef": echoed,
        "controllerName": CONTROLLER_NAME,
        "conditions": [
            condition("Accepted", *accepted, generation, now),
            condition("ResolvedRefs", *resolved, generation, now),
        ],
    }


def _same_parent(a: Mapping[str, Any], b: Mapping[str, Any], route_ns: str) -> bool:
    keys = ("name", "sectionName", "port")
    return (
        all(a.get(k) == b.get(k) for k in keys)
        and (a.get("namespace") or route_ns) == (b.get("namespace") or route_ns)
        and (a.get("group") or GROUP) == (b.get("group") or GROUP)
        and (a.get("kind") or "Gateway") == (b.get("kind") or "Gateway")
    )


def route_parents(route: Obj, mine: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Returns ``status.parents``: other controllers' entries as they are, then ``mine`` (each
    keeping the transition times of the entry it replaces)."""
    route_ns = str(route["metadata"].get("namespace") or "")
    old = list((route.get("status") or {}).get("parents") or [])
    kept = [p for p in old if p.get("controllerName") != CONTROLLER_NAME]
    for entry in mine:
        for prior in old:
            if prior.get("controllerName") == CONTROLLER_NAME and _same_parent(
                prior.get("parentRef") or {}, entry["parentRef"], route_ns
            ):
                keep_transition_times(entry["conditions"], prior.get("conditions"))
    return kept + mine
