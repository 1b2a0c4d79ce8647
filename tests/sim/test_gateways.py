"""The embedded Gateway implementation: GatewayClasses, Gateways and HTTPRoutes get the status a
Gateway API implementation reports (the CRDs come from the cache ``rayop up`` uses; the tests
skip when they are neither cached nor downloadable)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rayop.cli.gateway_api_crds import CrdsUnavailable, load_crds
from rayop.sim.controller_manager.gateway_api import CONTROLLER_NAME
from rayop.sim.controller_manager.gateways import GatewayController
from rayop.sim.storage.store import Store

from .sim_waiting import condition, info, wait_for

Obj = dict[str, Any]
G = "gateway.networking.k8s.io"


@pytest.fixture(scope="module")
def crds() -> list[Obj]:
    try:
        return load_crds()
    except CrdsUnavailable as exc:
        pytest.skip(f"Gateway API CRDs not available: {exc}")


@pytest.fixture
async def store(crds: list[Obj]) -> AsyncIterator[Store]:
    store = Store(seed=3)
    controller = GatewayController(store)
    await controller.start()
    for ns in ("other",):
        await store.create(info(store, "", "namespaces"), "", {"metadata": {"name": ns}})
    for crd in crds:
        await store.create(
            info(store, "apiextensions.k8s.io", "customresourcedefinitions"), "", crd
        )
    yield store
    await controller.stop()


def _true(obj: Obj | None, *types: str) -> bool:
    return all((condition(obj, t) or {}).get("status") == "True" for t in types)


def _gateway(name: str, listeners: list[Obj], cls: str = "istio") -> Obj:
    return {
        "apiVersion": f"{G}/v1",
        "kind": "Gateway",
        "metadata": {"name": name},
        "spec": {"gatewayClassName": cls, "listeners": listeners},
    }


def _route(name: str, parents: list[Obj], backends: list[Obj], **spec: Any) -> Obj:
    return {
        "apiVersion": f"{G}/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name},
        "spec": {"parentRefs": parents, "rules": [{"backendRefs": backends}], **spec},
    }


def _service(name: str) -> Obj:
    return {"metadata": {"name": name}, "spec": {"ports": [{"name": "serve", "port": 8000}]}}


def _entry_condition(entry: Obj, ctype: str) -> Obj:
    """Returns the condition ``ctype`` of a listener or parent status entry ({} when absent)."""
    return next((c for c in entry.get("conditions") or [] if c["type"] == ctype), {})


def _attached(gateway: Obj | None) -> list[int]:
    return [
        li["attachedRoutes"] for li in ((gateway or {}).get("status") or {}).get("listeners") or []
    ]


def _parent(route: Obj | None, gateway: str) -> Obj:
    for entry in ((route or {}).get("status") or {}).get("parents") or []:
        if entry["parentRef"]["name"] == gateway and entry["controllerName"] == CONTROLLER_NAME:
            return dict(entry)
    return {}


def _parent_is(gateway: str, **want: str) -> Callable[[Obj | None], bool]:
    def check(route: Obj | None) -> bool:
        entry = _parent(route, gateway)
        return bool(entry) and all(
            _entry_condition(entry, t).get("reason") == r for t, r in want.items()
        )

    return check


HTTP = {"name": "http", "protocol": "HTTP", "port": 80}


async def test_builtin_classes_are_accepted(store: Store) -> None:
    classes = info(store, G, "gatewayclasses")
    for name in ("rayop", "istio"):
        gc = await wait_for(
            store, classes, "", name, lambda o: _true(o, "Accepted", "SupportedVersion")
        )
        assert gc is not None and gc["spec"]["controllerName"] == CONTROLLER_NAME


async def test_gateway_and_route_are_programmed_then_follow_their_backends(store: Store) -> None:
    gateways, routes = info(store, G, "gateways"), info(store, G, "httproutes")
    services = info(store, "", "services")
    await store.create(services, "default", _service("a-serve-svc"))
    await store.create(gateways, "default", _gateway("gw", [HTTP]))
    backends = [
        {"name": "a-serve-svc", "port": 8000, "weight": 90},
        {"name": "b-serve-svc", "port": 8000, "weight": 10},
    ]
    await store.create(
        routes, "default", _route("rt", [{"name": "gw", "namespace": "default"}], backends)
    )

    route = await wait_for(
        store,
        routes,
        "default",
        "rt",
        _parent_is("gw", Accepted="Accepted", ResolvedRefs="BackendNotFound"),
    )
    assert _parent(route, "gw")["parentRef"] == {
        "group": G,
        "kind": "Gateway",
        "name": "gw",
        "namespace": "default",
    }
    gw = await wait_for(
        store,
        gateways,
        "default",
        "gw",
        lambda o: _true(o, "Accepted", "Programmed") and _attached(o) == [1],
    )
    assert gw is not None
    (listener,) = gw["status"]["listeners"]
    assert listener["supportedKinds"] == [{"group": G, "kind": "HTTPRoute"}]
    assert {c["type"]: c["status"] for c in listener["conditions"]} == {
        "Accepted": "True",
        "Programmed": "True",
        "ResolvedRefs": "True",
        "Conflicted": "False",
    }
    assert gw["status"]["addresses"] == [
        {"type": "Hostname", "value": "gw.default.gateway.rayop.internal"}
    ]

    await store.create(services, "default", _service("b-serve-svc"))  # the missing backend
    route = await wait_for(
        store,
        routes,
        "default",
        "rt",
        _parent_is("gw", Accepted="Accepted", ResolvedRefs="ResolvedRefs"),
    )
    assert _entry_condition(_parent(route, "gw"), "Accepted")["observedGeneration"] == 1

    await store.delete(routes, "default", "rt")
    await wait_for(
        store,
        gateways,
        "default",
        "gw",
        lambda o: _attached(o) == [0],
    )


async def test_route_refused_by_listeners(store: Store) -> None:
    gateways, routes = info(store, G, "gateways"), info(store, G, "httproutes")
    listeners = [HTTP, {"name": "tcp", "protocol": "TCP", "port": 9000}]
    await store.create(gateways, "default", _gateway("gw", listeners))
    gw = await wait_for(store, gateways, "default", "gw", lambda o: _true(o, "Programmed"))
    accepted = condition(gw, "Accepted")
    assert accepted is not None and (accepted["status"], accepted["reason"]) == (
        "True",
        "ListenersNotValid",
    )
    tcp = gw["status"]["listeners"][1] if gw else {}
    assert _entry_condition(tcp, "Accepted")["reason"] == "UnsupportedProtocol"

    parent = {"name": "gw", "namespace": "default"}
    await store.create(routes, "other", _route("cross", [parent], []))  # allowedRoutes: Same
    await wait_for(
        store, routes, "other", "cross", _parent_is("gw", Accepted="NotAllowedByListeners")
    )
    await store.create(routes, "default", _route("section", [{**parent, "sectionName": "tcp"}], []))
    await wait_for(
        store, routes, "default", "section", _parent_is("gw", Accepted="NoMatchingParent")
    )
    await store.create(routes, "default", _route("host", [parent], [], hostnames=["a.example.com"]))
    await wait_for(store, routes, "default", "host", _parent_is("gw", Accepted="Accepted"))


async def test_other_classes_are_left_alone(store: Store) -> None:
    gateways, routes = info(store, G, "gateways"), info(store, G, "httproutes")
    await store.create(gateways, "default", _gateway("foreign", [HTTP], cls="nginx"))
    await store.create(gateways, "default", _gateway("mine", [HTTP], cls="rayop"))
    await store.create(routes, "default", _route("rt", [{"name": "foreign"}, {"name": "mine"}], []))
    route = await wait_for(store, routes, "default", "rt", _parent_is("mine", Accepted="Accepted"))
    assert [p["parentRef"]["name"] for p in (route or {})["status"]["parents"]] == ["mine"]
    foreign = store.peek(gateways, "default", "foreign")
    assert (condition(foreign, "Accepted") or {}).get("reason") == "Pending"


async def test_https_listener_waits_for_its_certificate(store: Store) -> None:
    gateways, secrets = info(store, G, "gateways"), info(store, "", "secrets")
    https = {
        "name": "https",
        "protocol": "HTTPS",
        "port": 443,
        "tls": {"mode": "Terminate", "certificateRefs": [{"name": "cert"}]},
    }
    await store.create(gateways, "default", _gateway("gw", [https]))

    def listener_resolved(reason: str) -> Callable[[Obj | None], bool]:
        def check(gw: Obj | None) -> bool:
            listeners = ((gw or {}).get("status") or {}).get("listeners") or [{}]
            return _entry_condition(listeners[0], "ResolvedRefs").get("reason") == reason

        return check

    gw = await wait_for(
        store, gateways, "default", "gw", listener_resolved("InvalidCertificateRef")
    )
    assert (condition(gw, "Programmed") or {}).get("status") == "False"
    pair = {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}
    await store.create(secrets, "default", {"metadata": {"name": "cert"}, "data": pair})
    gw = await wait_for(store, gateways, "default", "gw", listener_resolved("ResolvedRefs"))
    assert _true(gw, "Accepted", "Programmed")


async def test_cross_namespace_backends_need_a_reference_grant(store: Store) -> None:
    gateways, routes = info(store, G, "gateways"), info(store, G, "httproutes")
    grants = info(store, G, "referencegrants", version="v1beta1")
    await store.create(info(store, "", "services"), "other", _service("svc"))
    everyone = {**HTTP, "allowedRoutes": {"namespaces": {"from": "All"}}}
    await store.create(gateways, "default", _gateway("gw", [everyone]))
    backend = [{"name": "svc", "namespace": "other", "port": 8000}]
    await store.create(routes, "default", _route("rt", [{"name": "gw"}], backend))
    await wait_for(store, routes, "default", "rt", _parent_is("gw", ResolvedRefs="RefNotPermitted"))
    grant = {
        "metadata": {"name": "routes-from-default"},
        "spec": {
            "from": [{"group": G, "kind": "HTTPRoute", "namespace": "default"}],
            "to": [{"group": "", "kind": "Service"}],
        },
    }
    await store.create(grants, "other", grant)
    await wait_for(store, routes, "default", "rt", _parent_is("gw", ResolvedRefs="ResolvedRefs"))
    parent = {"name": "gw", "namespace": "default"}
    await store.create(routes, "other", _route("there", [parent], []))  # allowedRoutes: All
    await wait_for(store, routes, "other", "there", _parent_is("gw", Accepted="Accepted"))
    await wait_for(store, gateways, "default", "gw", lambda o: _attached(o) == [2])
