"""KubeRay's incremental-upgrade sample on the embedded plane, with the Gateway API CRDs applied.

The sample (``ray-service.incremental-upgrade.yaml`` from KubeRay v1.7.0's source) is applied as
it is, and the embedded plane's Gateway implementation (class ``istio``, as the sample names it)
programs its Gateway and HTTPRoute: the test writes no status of its own. The first cluster gets a Gateway, an HTTPRoute sending it all the traffic and Serve
``target_capacity`` 100. A spec change then upgrades it with NewClusterWithIncrementalUpgrade;
the sample's 10 % every 30 s would take five minutes of real time (the schedule itself is tested
on virtual time in tests/controllers/rayservice/test_incremental_schedule.py), so the upgrade
runs with 25 % steps every second, and the route is seen moving 0/100 -> 25 -> 50 -> 75 -> 100
before the new cluster is promoted and the old one's capacity is 0.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from rayop.kube.resources import RAY_CLUSTERS, RAY_SERVICES
from rayop.sim.controller_manager.gateway_api import CONTROLLER_NAME
from rayop.testing import eventually, install_gateway_api_crds

from .incremental_env import (
    GATEWAYS,
    HTTP_ROUTES,
    CrdsUnavailable,
    gateway_api_crds,
    incremental_sample,
)
from .rayservice_env import RayServiceEnv, running_rayservice_operator

NS = "incremental"


async def _apply_crds(env: RayServiceEnv) -> None:
    try:
        crds = gateway_api_crds()
    except CrdsUnavailable as exc:
        pytest.skip(f"Gateway API CRDs not available: {exc}")
    await install_gateway_api_crds(env.client, crds)


def _backends(env: RayServiceEnv, name: str) -> list[tuple[str, int]]:
    route = env.stored(HTTP_ROUTES, NS, f"{name}-httproute")
    if route is None:
        return []
    refs = route["spec"]["rules"][0].get("backendRefs") or []
    return [(str(r["name"]), int(r.get("weight", 1))) for r in refs]


def _programmed(env: RayServiceEnv, name: str) -> tuple[Any, ...]:
    """Returns what the plane's Gateway implementation reported: the Gateway's Accepted and
    Programmed, its listener's attachedRoutes, the route's Accepted and ResolvedRefs (with the
    controllerName of the route's parent entry)."""
    gateway = env.stored(GATEWAYS, NS, f"{name}-gateway") or {}
    route = env.stored(HTTP_ROUTES, NS, f"{name}-httproute") or {}
    status = gateway.get("status") or {}
    found = {c["type"]: c["status"] for c in status.get("conditions") or []}
    (listener,) = status.get("listeners") or [{}]
    (parent,) = (route.get("status") or {}).get("parents") or [{}]
    parent_found = {c["type"]: c["status"] for c in parent.get("conditions") or []}
    return (
        found.get("Accepted"),
        found.get("Programmed"),
        listener.get("attachedRoutes"),
        [parent_found.get("Accepted"), parent_found.get("ResolvedRefs")],
        parent.get("controllerName"),
    )


PROGRAMMED = ("True", "True", 1, ["True", "True"], CONTROLLER_NAME)


async def test_sample_converges_then_upgrades_in_steps() -> None:
    async with running_rayservice_operator() as env:
        await env.namespace(NS)
        await _apply_crds(env)
        sample = incremental_sample()
        name = sample["metadata"]["name"]
        await env.client.create(RAY_SERVICES, sample, namespace=NS)
        # As in KubeRay, Ready can turn True before the first cluster is promoted: the
        # pending cluster's own serve Service counts its endpoints already.
        await eventually(
            lambda: env.is_ready(NS, name) and env.cluster_name(NS, name) != "",
            timeout=30,
            what="Ready with an active cluster",
        )
        old = env.cluster_name(NS, name)
        await eventually(
            lambda: _backends(env, name) == [(f"{old}-serve-svc", 100)],
            timeout=10,
            what="route to the first cluster",
        )
        gateway = env.stored(GATEWAYS, NS, f"{name}-gateway")
        assert gateway is not None
        assert gateway["spec"]["gatewayClassName"] == "istio"
        await eventually(
            lambda: _programmed(env, name) == PROGRAMMED, timeout=10, what="programmed by the plane"
        )
        assert [
            (li["name"], li["protocol"], li["port"]) for li in gateway["spec"]["listeners"]
        ] == [("http", "HTTP", 80)]

        def active_at(capacity: int, traffic: int) -> bool:
            active = env.status(NS, name)["activeServiceStatus"]
            return (active.get("targetCapacity"), active.get("trafficRoutedPercent")) == (
                capacity,
                traffic,
            )

        await eventually(lambda: active_at(100, 100), timeout=10, what="active 100/100")
        dash = env.cp.dashboards.for_cluster(NS, old)
        assert dash is not None and dash.serve.target_capacity == 100

        seen: list[list[tuple[str, int]]] = []

        async def sample_route() -> None:
            while True:
                backends = _backends(env, name)
                if not seen or seen[-1] != backends:
                    seen.append(backends)
                await asyncio.sleep(0.05)  # the sampling period of the route's states

        sampler = asyncio.create_task(sample_route())
        try:
            config = env.rayservice(NS, name)["spec"]["rayClusterConfig"]
            head = config["headGroupSpec"]
            await env.patch_spec(
                NS,
                name,
                {
                    "upgradeStrategy": {
                        "clusterUpgradeOptions": {
                            "stepSizePercent": 25,
                            "intervalSeconds": 1,
                            "maxSurgePercent": 25,
                        }
                    },
                    "rayClusterConfig": {
                        "headGroupSpec": {**head, "rayStartParams": {"num-cpus": "1"}}
                    },
                },
            )
            await eventually(
                lambda: env.cluster_name(NS, name) not in ("", old),
                timeout=60,
                what="new cluster promoted",
            )
            new = env.cluster_name(NS, name)
            await eventually(
                lambda: _backends(env, name) == [(f"{new}-serve-svc", 100)],
                timeout=10,
                what="route to the new cluster only",
            )
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
        new_weights = [dict(b).get(f"{new}-serve-svc") for b in seen if len(b) == 2]
        assert [w for w in new_weights if w is not None] == [0, 25, 50, 75, 100][
            -len(new_weights) :
        ]
        assert new_weights[-1] == 100 and len(new_weights) >= 4
        old_dash = env.cp.dashboards.for_cluster(NS, old)
        assert old_dash is not None and old_dash.serve.target_capacity == 0
        new_dash = env.cp.dashboards.for_cluster(NS, new)
        assert new_dash is not None and new_dash.serve.target_capacity == 100
        rc = env.stored(RAY_CLUSTERS, NS, new)
        assert rc is not None
        # Built without replicas, which the CRD defaults to 0 (then the autoscaler decides).
        assert rc["spec"]["workerGroupSpecs"][0]["replicas"] == 0
        status = env.status(NS, name)
        assert not status.get("pendingServiceStatus")
        assert env.condition(NS, name, "UpgradeInProgress") == ("False", "NoPendingCluster")
        assert env.is_ready(NS, name)
        assert _programmed(env, name) == PROGRAMMED
