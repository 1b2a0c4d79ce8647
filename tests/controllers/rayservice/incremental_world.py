"""A multi-pass harness for incremental-upgrade tests: the whole reconciler over the fakes.

:class:`Passes` runs :class:`~rayop.controllers.rayservice.reconciler.RayServiceReconciler`
pass after pass on a :class:`~rayservice_fakes.World` whose FakeClock advances 2 s (KubeRay's
requeue) between passes. Before each pass the caches are refreshed from the fake client (as an
informer would), new clusters get a ready head pod (in the cache and the client), and the
Gateway and HTTPRoute are given the status a Gateway implementation would write (Accepted,
Programmed; Accepted, ResolvedRefs), so the upgrade can move. Nothing sleeps: 300 virtual seconds take a fraction of a real one.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.controllers.rayservice.incremental.gateway import GATEWAYS, HTTP_ROUTES
from rayop.controllers.rayservice.reconciler import RayServiceReconciler
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS, RAY_CLUSTERS, RAY_SERVICES, SERVICES
from rayop.runtime.reconcile import Request

from .rayservice_fakes import NAME, NS, Obj, World, head_pod

PASS_SECONDS = 2.0

WORKER = {
    "groupName": "small",
    "replicas": 1,
    "minReplicas": 0,
    "maxReplicas": 4,
    "rayStartParams": {},
    "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray"}]}},
}


def incremental_spec(*, step: int, interval: int, surge: int) -> dict[str, Any]:
    """Returns the spec fields of a RayService upgraded with NewClusterWithIncrementalUpgrade."""
    return {
        "upgradeStrategy": {
            "type": "NewClusterWithIncrementalUpgrade",
            "clusterUpgradeOptions": {
                "gatewayClassName": "istio",
                "stepSizePercent": step,
                "intervalSeconds": interval,
                "maxSurgePercent": surge,
            },
        },
    }


def _accepted(*types: str) -> list[dict[str, str]]:
    return [{"type": t, "status": "True", "reason": t, "message": ""} for t in types]


class Passes:
    """Runs reconcile passes over one RayService; see the module docstring."""

    def __init__(self, world: World, service: Obj, *, program_gateway: bool = True) -> None:
        self.world = world
        self.program_gateway = program_gateway
        self.reconciler = RayServiceReconciler(world.deps())
        world.client.put(RAY_SERVICES, service)
        self.route_history: list[tuple[float, list[tuple[str, int]]]] = []

    def stored(self, res: Resource, name: str) -> Obj | None:
        """Returns the fake server's copy of ``name`` in the test namespace."""
        return self.world.client.stored(res, NS, name)

    @property
    def rayservice(self) -> Obj:
        """The RayService as the fake server holds it."""
        found = self.stored(RAY_SERVICES, NAME)
        assert found is not None
        return found

    @property
    def status(self) -> Obj:
        """The stored RayService's status."""
        return dict(self.rayservice.get("status") or {})

    def patch_spec(self, **spec: Any) -> None:
        """Changes the stored RayService's spec (a new generation)."""
        service = copy.deepcopy(self.rayservice)
        service["spec"].update(spec)
        service["metadata"]["generation"] = int(service["metadata"].get("generation") or 1) + 1
        self.world.client.put(RAY_SERVICES, service)

    def _sync(self) -> None:
        world, client = self.world, self.world.client
        for cache, res in (
            (world.rayservices, RAY_SERVICES),
            (world.clusters, RAY_CLUSTERS),
            (world.services, SERVICES),
        ):
            cache.clear()
            cache.put(*client.stored_all(res))
        for cluster in client.stored_all(RAY_CLUSTERS):
            name = cluster["metadata"]["name"]
            if world.pods.get(NS, name + "-head") is None:
                world.pods.put(head_pod(name))
                client.put(PODS, head_pod(name))
        if not self.program_gateway:
            return
        for gateway in client.stored_all(GATEWAYS):
            conditions = _accepted("Accepted", "Programmed")
            if (gateway.get("status") or {}).get("conditions") != conditions:
                gateway.setdefault("status", {})["conditions"] = conditions
                client.put(GATEWAYS, gateway)
        parent = {"name": f"{NAME}-gateway", "namespace": NS}
        accepted = {
            "parents": [
                {
                    "parentRef": parent,
                    "controllerName": "example.com/gateway",
                    "conditions": _accepted("Accepted", "ResolvedRefs"),
                }
            ]
        }
        for route in client.stored_all(HTTP_ROUTES):
            if route.get("status") != accepted:
                client.put(HTTP_ROUTES, route | {"status": accepted})

    def route_backends(self) -> list[tuple[str, int]]:
        """Returns the stored HTTPRoute's (backend, weight) pairs ([] when there is none)."""
        route = self.stored(HTTP_ROUTES, f"{NAME}-httproute")
        if route is None:
            return []
        refs = route["spec"]["rules"][0]["backendRefs"]
        return [(str(r["name"]), int(r["weight"])) for r in refs]

    async def run(self, count: int) -> None:
        """Runs ``count`` passes, 2 virtual seconds apart, recording each route change."""
        for _ in range(count):
            self._sync()
            await self.reconciler.reconcile(Request(NS, NAME))
            backends = self.route_backends()
            if not self.route_history or self.route_history[-1][1] != backends:
                self.route_history.append((self.world.clock.now(), backends))
            self.world.clock.step(PASS_SECONDS)
