"""``ray.io/initializing-timeout`` on virtual time: the RayService fails, then only retires."""

from __future__ import annotations

import copy
from typing import Any

from rayop.api.common import format_time
from rayop.controllers.rayservice.reconciler import RayServiceReconciler
from rayop.controllers.rayservice.status import finish_status
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.reconcile import Request, Result

from .rayservice_fakes import NAME, NS, World, cluster_of, rayservice, with_status

TIMEOUT = "ray.io/initializing-timeout"


def _timed(value: str = "90s") -> dict[str, Any]:
    service = rayservice()
    service["metadata"]["annotations"] = {TIMEOUT: value}
    return service


def _initializing_since(world: World, service: dict[str, Any], **status: Any) -> dict[str, Any]:
    """Returns ``service`` whose Ready has been False/Initializing since the clock's now."""
    since = format_time(world.clock.wall())
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": "Initializing",
            "message": "RayService is initializing",
            "lastTransitionTime": since,
        }
        for kind in ("Ready", "UpgradeInProgress")
    ]
    return with_status(service, conditions=conditions, **status)


def _ready(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "Ready")


async def test_initializing_past_the_timeout_fails_with_kuberays_condition_and_event() -> None:
    world = World()
    service = _initializing_since(world, _timed("90s"), active="svc-a", pending="svc-b")
    world.clock.step(89)
    ctx = world.context(service)
    await finish_status(ctx)
    assert _ready(ctx.status)["reason"] == "Initializing"
    assert world.events() == []

    world.clock.step(2)
    ctx = world.context(service)
    await finish_status(ctx)
    ready = _ready(ctx.status)
    assert (ready["status"], ready["reason"]) == ("False", "InitializingTimeout")
    assert ready["message"] == (
        "RayService failed to become ready within the configured timeout of 1m30s. "
        "Time spent initializing: 1m31s"
    )
    assert ctx.status["activeServiceStatus"] == {} and ctx.status["pendingServiceStatus"] == {}
    assert ctx.status["serviceStatus"] == ""
    upgrade = next(c for c in ctx.status["conditions"] if c["type"] == "UpgradeInProgress")
    assert upgrade["reason"] == "Initializing", "KubeRay leaves it as it was"
    assert world.events() == [
        (
            "Warning",
            "RayServiceInitializingTimeout",
            "RayService initializing timeout exceeded after 1m31s (configured timeout: 1m30s)",
        )
    ]
    assert world.actions() == ["Reconcile"]
    written = world.client.calls_of("update/status")[-1].body["status"]
    assert _ready(written)["reason"] == "InitializingTimeout"


async def test_seconds_are_read_too_and_ready_endpoints_win() -> None:
    world = World()
    service = _initializing_since(world, _timed("30"), active="svc-a")
    world.clock.step(30)
    ctx = world.context(service)
    await finish_status(ctx)
    assert _ready(ctx.status)["reason"] == "InitializingTimeout"

    world = World()
    service = _initializing_since(world, _timed("30"), active="svc-a")
    world.endpoint_slices.put(
        {
            "metadata": {
                "name": "s",
                "namespace": NS,
                "labels": {"kubernetes.io/service-name": f"{NAME}-serve-svc"},
            },
            "endpoints": [{"targetRef": {"uid": "p"}, "conditions": {"ready": True}}],
        }
    )
    world.clock.step(300)
    ctx = world.context(service)
    await finish_status(ctx)
    assert _ready(ctx.status)["reason"] == "NonZeroServeEndpoints"
    assert world.events() == []


async def test_only_initializing_times_out_and_no_annotation_never_does() -> None:
    world = World()
    service = _initializing_since(world, rayservice(), active="svc-a")
    world.clock.step(10_000)
    ctx = world.context(service)
    await finish_status(ctx)
    assert _ready(ctx.status)["reason"] == "Initializing"

    world = World()
    service = _initializing_since(world, _timed("1s"), active="svc-a")
    _ready(service["status"])["reason"] = "ValidationFailed"
    world.clock.step(10)
    ctx = world.context(service)
    await finish_status(ctx)
    assert _ready(ctx.status)["reason"] == "ValidationFailed"


async def test_a_timed_out_service_only_retires_its_clusters_then_stops() -> None:
    world = World()
    service = _initializing_since(world, _timed("1m"))
    timed_out = copy.deepcopy(service)
    _ready(timed_out["status"])["reason"] = "InitializingTimeout"
    world.add_cluster(cluster_of(service, "svc-a"))
    world.rayservices.put(timed_out)
    reconciler = RayServiceReconciler(world.deps())

    assert await reconciler.reconcile(Request(NS, NAME)) == Result(requeue_after=2.0)
    verbs = [(c.verb, c.resource) for c in world.client.calls]
    assert verbs == [("patch", "rayclusters")], "scheduled for deletion, nothing created"
    scheduled = world.client.stored(RAY_CLUSTERS, NS, "svc-a")
    assert scheduled is not None
    world.clusters.put(scheduled)

    world.clock.step(61)
    assert await reconciler.reconcile(Request(NS, NAME)) == Result(requeue_after=2.0)
    assert ("delete", "rayclusters") in [(c.verb, c.resource) for c in world.client.calls]

    world.clusters.clear()
    calls = len(world.client.calls)
    assert await reconciler.reconcile(Request(NS, NAME)) == Result()
    assert len(world.client.calls) == calls, "terminal: nothing more is done"
