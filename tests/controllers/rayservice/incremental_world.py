"""A multi-pass harness for incremental-upgrade tests: the whole reconciler over the fakes.

:class:`Passes` runs :class:`~rayop.controllers.rayservice.reconciler.RayServiceReconciler`
pass after pass on a :class:`~rayservice_fakes.World` whose FakeClock advances 2 s (KubeRay's
requeue) between passes. Before each pass the caches are refreshed from the fake client (as an
informer would), new clusters get a ready head pod, and the Gateway and HTTPRoute are given the
status a Gateway implementation would write (Accepted, Programmed; Accepted, ResolvedRefs), so
the upgrade can move. Nothing sleeps: 300 virtual seconds take a fraction of a real one.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.controllers.rayservice.reconciler import RayServiceReconciler
from rayop.kube.resources import RAY_CLUSTERS, RAY_SERVICES, SERVICES
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

    def stored(self, plural: str, name: str) -> Obj | None:
        """Returns the fake server's copy of ``plural/name`` in the test namespace."""
        return self.world.client.store.get((plural, NS, name))

    @property
    def rayservice(self) -> Obj:
        """The RayService as the fake server holds it."""
        found = self.stored(RAY_SERVICES.plural, NAME)
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
        world = self.world
        store = world.client.store
        world.rayservices.objects.clear()
        world.clusters.objects.clear()
        world.services.objects.clear()
        for (plural, _ns, name), obj in list(store.items()):
            if plural == RAY_SERVICES.plural:
                world.rayservices.put(obj)
            elif plural == RAY_CLUSTERS.plural:
                world.clusters.put(obj)
                if world.pods.get(NS, f"{name}-head") is None:
                    world.pods.put(head_pod(name))
            elif plural == SERVICES.plural:
                world.services.put(obj)
            elif self.program_gateway and plural == "gateways":
                obj.setdefault("status", {})["conditions"] = _accepted("Accepted", "Programmed")
            elif self.program_gateway and plural == "httproutes":
                parent = {"name": f"{NAME}-gateway", "namespace": NS}
                obj["status"] = {
                    "parents": [
                        {
                            "parentRef": parent,
                            "controllerName": "example.com/gateway",
                            "conditions": _accepted("Accepted", "ResolvedRefs"),
                        }
                    ]
                }

    def route_backends(self) -> list[tuple[str, int]]:
        """Returns the stored HTTPRoute's (backend, weight) pairs ([] when there is none)."""
        route = self.stored("httproutes", f"{NAME}-httproute")
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
