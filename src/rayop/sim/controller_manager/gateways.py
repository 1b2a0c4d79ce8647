"""The embedded Gateway implementation: programs Gateways and HTTPRoutes of its GatewayClasses.

Once the Gateway API CRDs (standard channel) are applied to the embedded plane, it creates the
GatewayClasses ``rayop`` and ``istio`` (``spec.controllerName`` ``rayop.dev/embedded-gateway``;
one that is already stored is never overwritten) and then reports, as a Gateway implementation
does, on every GatewayClass with that controllerName (``Accepted``, ``SupportedVersion``), every
Gateway of those classes (:mod:`.gateway_listeners`) and every HTTPRoute whose parentRefs name
one of those Gateways (:mod:`.gateway_routes`: one ``status.parents`` entry per such parentRef,
``Accepted`` and ``ResolvedRefs``). Statuses are rewritten only when they change.

There is no data plane: the Gateway is ``Programmed`` when its configuration is valid, and the
traffic split a client reads is the route's ``backendRefs`` weights. GRPCRoutes, TLSRoutes and
the experimental channel are not implemented.

Every relevant event runs one pass over the stored Gateway API objects: the Gateway API objects
themselves, the CRDs of the group, and the Services, Secrets and namespace labels the last pass
found referenced.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.gateway_api import (
    BUILTIN_CLASSES,
    CONTROLLER_NAME,
    GROUP,
    condition,
    keep_transition_times,
)
from rayop.sim.controller_manager.gateway_listeners import (
    Listener,
    evaluate_listeners,
    gateway_status,
)
from rayop.sim.controller_manager.gateway_routes import (
    attach,
    backend_refs,
    gateway_key,
    parent_entry,
    resolve_backends,
    route_parents,
)
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import timestamp
from rayop.sim.storage.controller_base import StoreController, meta
from rayop.sim.storage.store import Store

__all__ = ["GatewayController"]

Key = tuple[str, str]


def _key(obj: Obj) -> Key:
    md = obj["metadata"]
    return str(md.get("namespace") or ""), str(md.get("name") or "")


def builtin_class(name: str) -> Obj:
    """Returns the body of one GatewayClass the plane creates."""
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {
            "controllerName": CONTROLLER_NAME,
            "description": "The embedded plane's Gateway implementation (no data plane).",
        },
    }


class GatewayController(StoreController):
    """Programs the Gateways and HTTPRoutes of the plane's GatewayClasses (see the module)."""

    name = "gateways"
    watched = frozenset(
        {
            (GROUP, "gatewayclasses"),
            (GROUP, "gateways"),
            (GROUP, "httproutes"),
            (GROUP, "referencegrants"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("", "services"),
            ("", "secrets"),
            ("", "namespaces"),
        }
    )

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._services: set[Key] = set()
        self._secrets: set[Key] = set()
        self._selectors = False

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        if info.group == GROUP:
            return True
        if info.plural == "customresourcedefinitions":
            return (obj.get("spec") or {}).get("group") == GROUP
        if info.plural == "services":
            return _key(obj) in self._services
        if info.plural == "secrets":
            return _key(obj) in self._secrets
        return self._selectors  # a namespace's labels may change what a listener allows

    async def resync(self) -> None:
        await self._create_classes()
        await self._sync()

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if info.plural == "customresourcedefinitions":
            await self._create_classes()
        await self._sync()

    async def _create_classes(self) -> None:
        classes = self.resource(GROUP, "v1", "gatewayclasses")
        if classes is None:
            return
        for name in BUILTIN_CLASSES:
            if self.store.peek(classes, "", name) is None:
                with contextlib.suppress(Exception):  # created meanwhile, or refused: leave it
                    await self.store.create(classes, "", builtin_class(name))

    # -- one pass ------------------------------------------------------------------------

    async def _sync(self) -> None:
        classes = self.resource(GROUP, "v1", "gatewayclasses")
        gateways = self.resource(GROUP, "v1", "gateways")
        routes = self.resource(GROUP, "v1", "httproutes")
        if classes is None or gateways is None or routes is None:
            return
        self._note_references(gateways, routes)  # before any await: no event goes unseen
        now = timestamp(time.time())
        ours = await self._program_classes(classes, now)
        evaluated: dict[Key, tuple[Obj, list[Listener]]] = {}
        for gateway in self.store.list(gateways, copy=False)[0]:
            spec = gateway.get("spec") or {}
            if spec.get("gatewayClassName") not in ours or meta(gateway).get("deletionTimestamp"):
                continue
            listeners = evaluate_listeners(gateway, self._secret, self._grants)
            evaluated[_key(gateway)] = (gateway, listeners)
        for route in self.store.list(routes, copy=False)[0]:
            await self._program_route(routes, route, evaluated, now)
        for gateway, listeners in evaluated.values():
            await self._write_status(gateways, gateway, gateway_status(gateway, listeners, now))

    async def _program_classes(self, classes: ResourceInfo, now: str) -> set[str]:
        ours: set[str] = set()
        for gc in self.store.list(classes, copy=False)[0]:
            if (gc.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
                continue
            name = str(meta(gc).get("name"))
            if not meta(gc).get("deletionTimestamp"):
                ours.add(name)
            generation = meta(gc).get("generation")
            conditions = [
                condition(
                    "Accepted", True, "Accepted", "Handled by the embedded plane", generation, now
                ),
                condition(
                    "SupportedVersion",
                    True,
                    "SupportedVersion",
                    "Gateway API standard channel",
                    generation,
                    now,
                ),
            ]
            old = gc.get("status") or {}
            status = {**old, "conditions": keep_transition_times(conditions, old.get("conditions"))}
            await self._write_status(classes, gc, status)
        return ours

    def _note_references(self, gateways: ResourceInfo, routes: ResourceInfo) -> None:
        """Records the Services, Secrets and namespace selectors the stored objects refer to,
        whose events then wake the controller."""
        secrets: set[Key] = set()
        selectors = False
        for gateway in self.store.list(gateways, copy=False)[0]:
            namespace = _key(gateway)[0]
            for spec in (gateway.get("spec") or {}).get("listeners") or []:
                allowed = (spec.get("allowedRoutes") or {}).get("namespaces") or {}
                selectors = selectors or allowed.get("from") == "Selector"
                for ref in (spec.get("tls") or {}).get("certificateRefs") or []:
                    secrets.add((str(ref.get("namespace") or namespace), str(ref.get("name"))))
        services: set[Key] = set()
        for route in self.store.list(routes, copy=False)[0]:
            namespace = _key(route)[0]
            for ref in backend_refs(route):
                services.add((str(ref.get("namespace") or namespace), str(ref.get("name"))))
        self._secrets, self._services, self._selectors = secrets, services, selectors

    async def _program_route(
        self,
        routes: ResourceInfo,
        route: Obj,
        evaluated: dict[Key, tuple[Obj, list[Listener]]],
        now: str,
    ) -> None:
        if meta(route).get("deletionTimestamp"):
            return
        route_ns = _key(route)[0]
        mine: list[dict[str, Any]] = []
        for ref in (route.get("spec") or {}).get("parentRefs") or []:
            key = gateway_key(route_ns, ref)
            if key is None or key not in evaluated:
                continue
            _, listeners = evaluated[key]
            accepted, chosen = attach(route, ref, key[0], listeners, self._namespace_labels)
            for listener in chosen:
                listener.attached += 1
            resolved = resolve_backends(route, self._service, self._grants)
            mine.append(parent_entry(route, ref, accepted, resolved, now))
        old = (route.get("status") or {}).get("parents") or []
        if not mine and all(p.get("controllerName") != CONTROLLER_NAME for p in old):
            return
        await self._write_status(routes, route, {"parents": route_parents(route, mine)})

    async def _write_status(self, info: ResourceInfo, obj: Obj, status: dict[str, Any]) -> None:
        if obj.get("status") == status:
            return
        namespace, name = _key(obj)

        def change(current: Obj) -> bool:
            if current.get("status") == status:
                return False
            current["status"] = status
            return True

        await self.mutate(
            info, namespace, name, change, subresource="status", uid=str(meta(obj).get("uid"))
        )

    # -- lookups -------------------------------------------------------------------------

    def _peek(self, group: str, version: str, plural: str, namespace: str, name: str) -> Obj | None:
        info = self.resource(group, version, plural)
        return None if info is None else self.store.peek(info, namespace, name)

    def _service(self, namespace: str, name: str) -> Obj | None:
        return self._peek("", "v1", "services", namespace, name)

    def _secret(self, namespace: str, name: str) -> Obj | None:
        return self._peek("", "v1", "secrets", namespace, name)

    def _grants(self, namespace: str) -> list[Obj]:
        info = self.resource(GROUP, "v1beta1", "referencegrants")
        return [] if info is None else self.store.list(info, namespace, copy=False)[0]

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self._peek("", "v1", "namespaces", "", namespace)
        return dict(meta(ns).get("labels") or {}) if ns is not None else {}
