"""The step schedule of NewClusterWithIncrementalUpgrade, on virtual time (FakeClock).

The whole reconciler runs pass after pass (2 s apart) over the fakes, with the sample's options
(``stepSizePercent`` 10, ``intervalSeconds`` 30, ``maxSurgePercent`` 10): the route's weights
move 10 points at a time and never sooner than 30 s apart, the two clusters' Serve
``target_capacity`` never sums above 110, and the new cluster is promoted only when it has all
the traffic and the old one no capacity.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from rayop.controllers.rayservice.incremental.gateway import GATEWAYS, HTTP_ROUTES
from rayop.kube.errors import NotFound
from rayop.kube.resources import RAY_CLUSTERS, SERVICES
from rayop.testing import api_error

from .incremental_world import WORKER, Passes, incremental_spec
from .rayservice_fakes import NAME, World, rayservice


def _sample_like(**spec: Any) -> dict[str, Any]:
    service = rayservice(**incremental_spec(step=10, interval=30, surge=10), **spec)
    config = service["spec"]["rayClusterConfig"]
    config["enableInTreeAutoscaling"] = True
    config["workerGroupSpecs"] = [dict(WORKER)]
    return service


def _capacities(passes: Passes) -> tuple[int | None, int | None]:
    status = passes.status
    active = (status.get("activeServiceStatus") or {}).get("targetCapacity")
    pending = (status.get("pendingServiceStatus") or {}).get("targetCapacity")
    return active, pending


async def _deployed(passes: Passes) -> str:
    await passes.run(4)
    active = passes.status["activeServiceStatus"]
    assert active["targetCapacity"] == 100
    assert active["trafficRoutedPercent"] == 100
    return str(active["rayClusterName"])


async def test_first_cluster_gets_all_capacity_and_the_whole_route() -> None:
    world = World()
    passes = Passes(world, _sample_like())
    old = await _deployed(passes)
    assert passes.route_backends() == [(f"{old}-serve-svc", 100)]
    gateway = passes.stored(GATEWAYS, f"{NAME}-gateway")
    assert gateway is not None
    assert gateway["spec"] == {
        "gatewayClassName": "istio",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
    }
    puts = world.dashboards.of(old).puts
    assert puts and all(p["target_capacity"] == 100 for p in puts)
    assert passes.stored(SERVICES, f"{old}-serve-svc") is not None
    assert passes.stored(SERVICES, f"{NAME}-serve-svc") is None


async def test_traffic_moves_in_steps_of_ten_every_thirty_seconds() -> None:
    world = World()
    passes = Passes(world, _sample_like())
    old = await _deployed(passes)
    head = passes.rayservice["spec"]["rayClusterConfig"]["headGroupSpec"]
    passes.patch_spec(
        rayClusterConfig={
            **passes.rayservice["spec"]["rayClusterConfig"],
            "headGroupSpec": {**head, "rayStartParams": {"num-cpus": "0"}},
        }
    )
    passes.route_history.clear()
    capacities: list[tuple[int | None, int | None]] = []
    new = ""
    for _ in range(200):
        await passes.run(1)
        capacities.append(_capacities(passes))
        new = new or str((passes.status.get("pendingServiceStatus") or {}).get("rayClusterName"))
        if passes.status["activeServiceStatus"]["rayClusterName"] != old:
            break
    assert new and new != old
    assert passes.status["activeServiceStatus"]["rayClusterName"] == new
    # The new cluster starts without worker replicas (it scales from minReplicas).
    created = passes.stored(RAY_CLUSTERS, new)
    assert created is not None
    assert "replicas" not in created["spec"]["workerGroupSpecs"][0]
    # Route weights: +10 on the new cluster (its head is ready at once here), then +10 again
    # every 30 s (passes are 2 s apart), up to 0/100.
    weights = [
        dict(backends).get(f"{new}-serve-svc")
        for _, backends in passes.route_history
        if len(backends) == 2
    ]
    assert weights == list(range(10, 101, 10))
    times = [t for t, backends in passes.route_history if len(backends) == 2]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 9
    assert all(30 <= gap <= 32 for gap in gaps)
    # target_capacity within maxSurgePercent: never more than 110 in total.
    assert all(a + p <= 110 for a, p in capacities if a is not None and p is not None)
    new_puts = [p["target_capacity"] for p in world.dashboards.of(new).puts]
    assert new_puts == list(range(0, 101, 10))
    old_puts = [p["target_capacity"] for p in world.dashboards.of(old).puts]
    assert old_puts[-10:] == list(range(90, -1, -10))
    # Promotion: the new cluster is active at full capacity and traffic.
    active = passes.status["activeServiceStatus"]
    assert (active["targetCapacity"], active["trafficRoutedPercent"]) == (100, 100)
    assert not passes.status.get("pendingServiceStatus")
    await passes.run(1)
    assert passes.route_backends() == [(f"{new}-serve-svc", 100)]


async def test_without_a_programmed_gateway_no_traffic_moves() -> None:
    world = World()
    passes = Passes(world, _sample_like(), program_gateway=False)
    old = await _deployed(passes)
    config = passes.rayservice["spec"]["rayClusterConfig"]
    passes.patch_spec(rayClusterConfig={**config, "rayVersion": "2.53.0"})
    await passes.run(60)
    pending = passes.status["pendingServiceStatus"]
    assert pending["targetCapacity"] == 0
    assert passes.status["activeServiceStatus"]["rayClusterName"] == old
    assert dict(passes.route_backends())[f"{old}-serve-svc"] == 100


async def test_reverted_spec_rolls_traffic_back_in_steps_then_drops_the_new_cluster() -> None:
    world = World()
    passes = Passes(world, _sample_like())
    old = await _deployed(passes)
    original = passes.rayservice["spec"]["rayClusterConfig"]
    passes.patch_spec(rayClusterConfig={**original, "rayVersion": "2.53.0"})
    await passes.run(40)  # 80 s: the new cluster has 30 % of the traffic
    new = passes.status["pendingServiceStatus"]["rayClusterName"]
    assert dict(passes.route_backends())[f"{new}-serve-svc"] == 30
    passes.patch_spec(rayClusterConfig=original)
    await passes.run(1)
    rollback = [c for c in passes.status["conditions"] if c["type"] == "RollbackInProgress"]
    assert [(c["status"], c["reason"], c["message"]) for c in rollback] == [
        (
            "True",
            "DesiredClusterSpecChanged",
            "Goal state reverted to original cluster, rolling back.",
        )
    ]
    passes.route_history.clear()
    for _ in range(100):
        await passes.run(1)
        if not passes.status.get("pendingServiceStatus"):
            break
    assert passes.status["activeServiceStatus"]["rayClusterName"] == old
    assert not passes.status.get("pendingServiceStatus")
    kinds = {c["type"]: (c["status"], c["reason"]) for c in passes.status["conditions"]}
    assert "RollbackInProgress" not in kinds
    assert kinds["UpgradeInProgress"] == ("False", "NoPendingCluster")
    old_weights = [dict(b).get(f"{old}-serve-svc") for _, b in passes.route_history]
    assert old_weights[:4] == [70, 80, 90, 100]
    active = passes.status["activeServiceStatus"]
    assert (active["targetCapacity"], active["trafficRoutedPercent"]) == (100, 100)
    await passes.run(1)
    assert passes.route_backends() == [(f"{old}-serve-svc", 100)]


async def test_suspend_deletes_the_gateway_and_route_with_kuberays_events() -> None:
    world = World()
    passes = Passes(world, _sample_like())
    await _deployed(passes)
    passes.patch_spec(suspend=True)
    await passes.run(6)
    assert passes.stored(GATEWAYS, f"{NAME}-gateway") is None
    assert passes.stored(HTTP_ROUTES, f"{NAME}-httproute") is None
    notes = {(reason, note) for _, reason, note in world.events()}
    assert ("DeletedGateway", f"Deleted the Gateway ns/{NAME}-gateway during suspend") in notes
    assert (
        "DeletedHTTPRoute",
        f"Deleted the HTTPRoute ns/{NAME}-httproute during suspend",
    ) in notes
    kinds = {c["type"]: c["status"] for c in passes.status["conditions"]}
    assert kinds["Suspended"] == "True"
    deletes = [c for c in world.client.calls_of("delete") if c.kind in ("Gateway", "HTTPRoute")]
    assert len(deletes) == 2  # each by the uid of the copy just read: a recreated one stays
    assert all((c.body or {}).get("preconditions", {}).get("uid") for c in deletes)


async def test_a_missing_gateway_api_is_a_warning_event_and_a_retry() -> None:
    world = World()
    passes = Passes(world, _sample_like())
    missing = api_error(NotFound, 404, "NotFound", "the server could not find the resource")
    world.client.fail_next("create", missing, kind="Gateway")
    with pytest.raises(NotFound):
        await passes.run(1)
    warnings = [(r, n) for t, r, n in world.events() if t == "Warning"]
    assert warnings and warnings[0][0] == "FailedToCreateGateway"
    assert warnings[0][1].startswith(f"Failed to create Gateway for RayService ns/{NAME}-gateway: ")
