"""Differential test: KubeRay's incremental-upgrade sample, KubeRay v1.7.0's binary against rayop.

On the real control plane with the Gateway API CRDs (``scripts/gateway-api-crds``) applied and
the simulated Ray heads of ``pod_network.py`` (reached through the services proxy), each
operator in turn runs ``ray-service.incremental-upgrade.yaml`` from KubeRay's source: first
deployment, then a spec change upgraded with NewClusterWithIncrementalUpgrade (25 % steps every
second, 25 % surge, so that it ends in seconds; the sample's 10 %/30 s schedule is tested on
virtual time in tests/controllers/rayservice/test_incremental_schedule.py). A Gateway
implementation is played by :class:`rayop.testing.GatewayProgrammer`. Compared, with cluster
names as ``<old>``/``<new>``: the Gateway, the HTTPRoute and the per-cluster serve Services
(spec, labels, owners), the RayService status at each end (target capacities, traffic percents,
conditions), the route's weights and the Serve ``target_capacity`` of both heads as they moved,
and the Serve config the new head ends with. A second test reverts the spec once the new cluster
has half the traffic and compares the rollback: ``RollbackInProgress``, the weights and
capacities moving back, and the status once the new cluster is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rayop.cli.realcluster import pod_network_socket
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import RAY_SERVICES, SERVICES
from rayop.testing import ALL_KINDS, GatewayProgrammer, install_gateway_api_crds, open_operator
from rayop.testing.gateway_api import GATEWAYS, HTTP_ROUTES
from tests.e2e.incremental_env import gateway_api_crds, incremental_sample

from .pod_network import PodNetwork
from .real_support import create_namespace, kuberay_running, user_client

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(420, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

Obj = dict[str, Any]
UPGRADE_OPTIONS = {"stepSizePercent": 25, "intervalSeconds": 1, "maxSurgePercent": 25}


class _Names:
    """Replaces namespaces and cluster names by placeholders throughout a snapshot."""

    def __init__(self, namespace: str) -> None:
        self.map: dict[str, str] = {namespace: "<ns>"}

    def add(self, name: str, placeholder: str) -> None:
        if name:
            self.map[name] = placeholder

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {self(k): self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        if isinstance(value, str):
            for name in sorted(self.map, key=len, reverse=True):
                value = value.replace(name, self.map[name])
        return value


def _owners(obj: Obj) -> list[tuple[Any, ...]]:
    return [
        (o.get("kind"), o.get("name"), o.get("controller"), o.get("blockOwnerDeletion"))
        for o in (obj.get("metadata") or {}).get("ownerReferences") or []
    ]


def _entry(status: Obj, which: str) -> Obj:
    entry = status.get(f"{which}ServiceStatus") or {}
    return {
        "rayClusterName": entry.get("rayClusterName", ""),
        "targetCapacity": entry.get("targetCapacity"),
        "trafficRoutedPercent": entry.get("trafficRoutedPercent"),
        "hasLastTrafficMigratedTime": "lastTrafficMigratedTime" in entry,
    }


def _status_view(status: Obj) -> Obj:
    return {
        "active": _entry(status, "active"),
        "pending": _entry(status, "pending"),
        "conditions": sorted(
            (c["type"], c["status"], c["reason"], c.get("message", ""))
            for c in status.get("conditions") or []
        ),
        "serviceStatus": status.get("serviceStatus"),
    }


async def _objects(client: KubeClient, ns: str, name: str, clusters: list[str]) -> Obj:
    gateway = await client.get(GATEWAYS, f"{name}-gateway", namespace=ns)
    route = await client.get(HTTP_ROUTES, f"{name}-httproute", namespace=ns)
    services = {}
    for cluster in clusters:
        svc = await client.get(SERVICES, f"{cluster}-serve-svc", namespace=ns)
        spec = svc["spec"]
        services[cluster] = {
            "labels": svc["metadata"].get("labels"),
            "owners": _owners(svc),
            "selector": spec.get("selector"),
            "ports": sorted((p.get("name"), p.get("port")) for p in spec.get("ports") or []),
            "type": spec.get("type"),
        }
    return {
        "gateway": {
            "labels": gateway["metadata"].get("labels"),
            "owners": _owners(gateway),
            "spec": gateway["spec"],
        },
        "route": {
            "labels": route["metadata"].get("labels"),
            "owners": _owners(route),
            "spec": route["spec"],
        },
        "serveServices": services,
    }


async def _wait(check: Callable[[], Any], what: str, timeout: float = 120) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.5)


async def _run(client: KubeClient, network: PodNetwork, ns: str, sample: Obj) -> Obj:
    """Deploys the sample, upgrades it, and returns the normalised snapshot."""
    name = sample["metadata"]["name"]
    names = _Names(ns)
    result: Obj = {}
    obj = copy.deepcopy(sample)
    obj["metadata"]["namespace"] = ns
    async with GatewayProgrammer(client, ns):
        await client.create(RAY_SERVICES, obj, namespace=ns)

        async def status() -> Obj:
            found = await client.get(RAY_SERVICES, name, namespace=ns)
            return dict(found.get("status") or {})

        async def deployed() -> bool:
            active = (await status()).get("activeServiceStatus") or {}
            return active.get("trafficRoutedPercent") == 100 and bool(active.get("rayClusterName"))

        await _wait(deployed, "first cluster with all the traffic")
        old = (await status())["activeServiceStatus"]["rayClusterName"]
        names.add(old, "<old>")
        await asyncio.sleep(3)  # a few more passes: nothing may change once deployed
        result["deployed"] = {
            "status": _status_view(await status()),
            **await _objects(client, ns, name, [old]),
        }
        old_dash = network.for_cluster(ns, old)
        assert old_dash is not None
        old_capacities_before = len(old_dash.serve.capacities)
        moves: list[tuple[Any, ...]] = []

        async def observe() -> None:
            while True:
                route = await client.get(HTTP_ROUTES, f"{name}-httproute", namespace=ns)
                weights = tuple(
                    (r["name"], r.get("weight"))
                    for r in route["spec"]["rules"][0].get("backendRefs") or []
                )
                capacities = tuple(
                    None if dash is None else dash.serve.target_capacity
                    for dash in (
                        network.for_cluster(ns, c)
                        for c in names.map
                        if names.map[c] in ("<old>", "<new>")
                    )
                )
                state = (weights, capacities)
                if not moves or moves[-1] != state:
                    moves.append(state)
                await asyncio.sleep(0.1)

        observer = asyncio.create_task(observe())
        try:
            config = (await client.get(RAY_SERVICES, name, namespace=ns))["spec"]
            head = config["rayClusterConfig"]["headGroupSpec"]
            patch = {
                "upgradeStrategy": {"clusterUpgradeOptions": UPGRADE_OPTIONS},
                "rayClusterConfig": {
                    "headGroupSpec": {**head, "rayStartParams": {"num-cpus": "1"}}
                },
            }
            await client.patch(RAY_SERVICES, name, {"spec": patch}, namespace=ns)

            async def pending_named() -> bool:
                pending = (await status()).get("pendingServiceStatus") or {}
                return bool(pending.get("rayClusterName"))

            await _wait(pending_named, "a pending cluster")
            new = (await status())["pendingServiceStatus"]["rayClusterName"]
            names.add(new, "<new>")

            async def promoted() -> bool:
                active = (await status()).get("activeServiceStatus") or {}
                route = await client.get(HTTP_ROUTES, f"{name}-httproute", namespace=ns)
                refs = route["spec"]["rules"][0].get("backendRefs") or []
                return active.get("rayClusterName") == new and len(refs) == 1

            await _wait(promoted, "the new cluster promoted, alone on the route", timeout=180)
            await asyncio.sleep(3)
        finally:
            observer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await observer
        result["upgraded"] = {
            "status": _status_view(await status()),
            **await _objects(client, ns, name, [new]),
        }
        result["moves"] = moves
        dash = network.for_cluster(ns, new)
        assert dash is not None
        # Every target_capacity each head was given during the upgrade, from the simulated
        # Serve's own record (the observer's 0.1 s samples can miss a step that lasts less).
        result["capacities"] = {
            "<old>": _dedup(old_dash.serve.capacities[max(old_capacities_before - 1, 0) :]),
            "<new>": _dedup(dash.serve.capacities),
        }
        result["newServe"] = {
            "apps": sorted(dash.serve.apps),
            "targetCapacity": dash.serve.target_capacity,
        }
    normalised: Obj = names(result)
    return normalised


async def test_the_same_incremental_upgrade_as_kuberay(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    sample = incremental_sample()
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"ik-{token}", f"ir-{token}"
    log_path = tmp_path / "ray-operator.log"
    socket = pod_network_socket(Path(real_kubeconfig))
    async with user_client(real_kubeconfig) as client:
        await install_gateway_api_crds(client, gateway_api_crds())
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        async with PodNetwork(client, socket) as network:
            watch = f"--watch-namespace={kuberay_ns}"
            async with kuberay_running(
                kuberay_binary, real_kubeconfig, log_path, "--use-kubernetes-proxy", watch
            ):
                kuberay = await _run(client, network, kuberay_ns, sample)
        async with PodNetwork(client, socket) as network:
            config = await load_config(kubeconfig=real_kubeconfig)
            async with open_operator(
                config,
                watch_namespaces=[rayop_ns],
                controllers=ALL_KINDS,
                ready_timeout=60,
                use_kubernetes_proxy=True,
            ):
                rayop = await _run(client, network, rayop_ns, sample)
    (tmp_path / "outcomes.json").write_text(json.dumps({"kuberay": kuberay, "rayop": rayop}))
    weights = [dict(w).get("<new>-serve-svc") for w, _ in kuberay["moves"] if len(w) == 2]
    steps = [w for i, w in enumerate(weights) if w and (i == 0 or weights[i - 1] != w)]
    assert steps == [25, 50, 75, 100], kuberay["moves"]
    assert kuberay["capacities"]["<new>"] == [0.0, 25.0, 50.0, 75.0, 100.0], kuberay
    for key in ("deployed", "upgraded", "newServe", "capacities"):
        assert rayop[key] == kuberay[key], (key, kuberay[key], rayop[key])
    assert _steps(rayop["moves"])[0] == _steps(kuberay["moves"])[0], (
        kuberay["moves"],
        rayop["moves"],
    )


def _dedup(values: list[Any]) -> list[Any]:
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


def _steps(moves: list[Any]) -> tuple[list[Any], list[Any]]:
    """The route's weight steps and each cluster's target_capacity steps, in their order.

    The route write and the Serve config PUTs of one step (one per cluster) are separate
    requests, and the observer samples them every 0.1 s, so which one it sees first is timing,
    not behaviour: the route's sequence and each cluster's capacity sequence are compared on
    their own. Capacities are counted once every cluster of the upgrade has a dashboard
    (``None`` is a head not yet up). The upgrade test compares the capacities from the
    dashboards' own record instead (a head can be given two capacities between two samples)."""
    dedup = _dedup
    weights = dedup([list(w) for w, _ in moves])
    both = [list(c) for _, c in moves if None not in c]
    width = max((len(c) for c in both), default=0)
    per_cluster = [dedup([c[i] for c in both if len(c) == width]) for i in range(width)]
    return weights, per_cluster


ROLLBACK_OPTIONS = {"stepSizePercent": 25, "intervalSeconds": 4, "maxSurgePercent": 25}


async def _run_rollback(client: KubeClient, network: PodNetwork, ns: str, sample: Obj) -> Obj:
    """Deploys the sample, starts an upgrade, reverts the spec once the new cluster has half the
    traffic, and returns what the rollback did (normalised)."""
    name = sample["metadata"]["name"]
    names = _Names(ns)
    obj = copy.deepcopy(sample)
    obj["metadata"]["namespace"] = ns
    route_name = f"{name}-httproute"

    async def status() -> Obj:
        return dict((await client.get(RAY_SERVICES, name, namespace=ns)).get("status") or {})

    async def weights() -> list[tuple[str, Any]]:
        route = await client.get(HTTP_ROUTES, route_name, namespace=ns)
        refs = route["spec"]["rules"][0].get("backendRefs") or []
        return [(str(r["name"]), r.get("weight")) for r in refs]

    async with GatewayProgrammer(client, ns):
        await client.create(RAY_SERVICES, obj, namespace=ns)

        async def deployed() -> bool:
            active = (await status()).get("activeServiceStatus") or {}
            return active.get("trafficRoutedPercent") == 100 and bool(active.get("rayClusterName"))

        await _wait(deployed, "first cluster with all the traffic")
        spec = (await client.get(RAY_SERVICES, name, namespace=ns))["spec"]
        original = copy.deepcopy(spec["rayClusterConfig"])
        old = (await status())["activeServiceStatus"]["rayClusterName"]
        names.add(old, "<old>")
        head = original["headGroupSpec"]
        patch = {
            "upgradeStrategy": {"clusterUpgradeOptions": ROLLBACK_OPTIONS},
            "rayClusterConfig": {"headGroupSpec": {**head, "rayStartParams": {"num-cpus": "1"}}},
        }
        await client.patch(RAY_SERVICES, name, {"spec": patch}, namespace=ns)

        async def half() -> bool:
            return len(found := await weights()) == 2 and found[1][1] == 50

        await _wait(half, "half the traffic on the new cluster")
        new = (await status())["pendingServiceStatus"]["rayClusterName"]
        names.add(new, "<new>")
        revert = {"rayClusterConfig": {"headGroupSpec": head}}
        await client.patch(RAY_SERVICES, name, {"spec": revert}, namespace=ns)
        moves: list[Any] = []
        conditions: list[Any] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while loop.time() < deadline:
            current = await status()
            found = await weights()
            dashes = (network.for_cluster(ns, c) for c in (old, new))
            capacities = [None if d is None else d.serve.target_capacity for d in dashes]
            state = (found, capacities)
            if not moves or moves[-1] != state:
                moves.append(state)
            rollback = [
                (c["status"], c["reason"], c.get("message", ""))
                for c in current.get("conditions") or []
                if c["type"] == "RollbackInProgress"
            ]
            if not conditions or conditions[-1] != rollback:
                conditions.append(rollback)
            if (
                not (current.get("pendingServiceStatus") or {}).get("rayClusterName")
                and len(found) == 1
            ):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(3)
        result = {
            "moves": moves,
            "rollbackConditions": conditions,
            "status": _status_view(await status()),
            "route": await weights(),
        }
    normalised: Obj = names(result)
    return normalised


async def test_the_same_rollback_as_kuberay(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    sample = incremental_sample()
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"rk-{token}", f"rr-{token}"
    log_path = tmp_path / "ray-operator.log"
    socket = pod_network_socket(Path(real_kubeconfig))
    async with user_client(real_kubeconfig) as client:
        await install_gateway_api_crds(client, gateway_api_crds())
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        async with PodNetwork(client, socket) as network:
            watch = f"--watch-namespace={kuberay_ns}"
            async with kuberay_running(
                kuberay_binary, real_kubeconfig, log_path, "--use-kubernetes-proxy", watch
            ):
                kuberay = await _run_rollback(client, network, kuberay_ns, sample)
        async with PodNetwork(client, socket) as network:
            config = await load_config(kubeconfig=real_kubeconfig)
            async with open_operator(
                config,
                watch_namespaces=[rayop_ns],
                controllers=ALL_KINDS,
                ready_timeout=60,
                use_kubernetes_proxy=True,
            ):
                rayop = await _run_rollback(client, network, rayop_ns, sample)
    (tmp_path / "rollback.json").write_text(json.dumps({"kuberay": kuberay, "rayop": rayop}))
    assert kuberay["route"] == [["<old>-serve-svc", 100]], kuberay
    assert kuberay["rollbackConditions"][1][0][:2] == ["True", "DesiredClusterSpecChanged"]
    for key in ("rollbackConditions", "status", "route"):
        assert rayop[key] == kuberay[key], (key, kuberay[key], rayop[key])
    assert _steps(rayop["moves"]) == _steps(kuberay["moves"]), (kuberay["moves"], rayop["moves"])
