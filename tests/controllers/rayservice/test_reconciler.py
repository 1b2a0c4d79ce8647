"""The pass as a whole: steps in order, what an early stop does with the status, requeues."""

from __future__ import annotations

from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.reconciler import RayServiceReconciler, requeue_after
from rayop.kube.resources import RAY_SERVICES
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.steps import Stop

from .rayservice_fakes import NAME, NS, World, cluster_of, rayservice, with_status


async def test_a_new_service_gets_a_pending_cluster_and_a_status_in_one_pass() -> None:
    world = World()
    world.rayservices.put(rayservice())
    world.client.put(RAY_SERVICES, rayservice())
    result = await RayServiceReconciler(world.deps()).reconcile(Request(NS, NAME))
    assert result == Result(requeue_after=2.0)
    assert [c.verb for c in world.client.calls] == ["update/status", "create", "update/status"]
    last = world.client.calls_of("update/status")[-1].body["status"]
    assert last["pendingServiceStatus"]["rayClusterName"].startswith("svc-")
    ready = {c["type"]: c["reason"] for c in last["conditions"]}
    assert ready == {"Ready": "Initializing", "UpgradeInProgress": "Initializing"}


async def test_a_pass_right_after_our_write_waits_for_the_cache() -> None:
    world = World()
    world.rayservices.put(rayservice())
    world.client.put(RAY_SERVICES, rayservice())
    reconciler = RayServiceReconciler(world.deps())
    await reconciler.reconcile(Request(NS, NAME))
    calls = len(world.client.calls)
    assert await reconciler.reconcile(Request(NS, NAME)) == Result(requeue_after=2.0)
    assert len(world.client.calls) == calls


async def test_an_early_stop_writes_or_drops_the_status_edits_as_it_says() -> None:
    async def edit_then(stop: Stop, ctx: PassContext) -> Stop:
        ctx.status["numServeEndpoints"] = 3
        return stop

    async def writes(ctx: PassContext) -> Stop:
        return await edit_then(Stop.after_status_write(Result(requeue_after=1.0)), ctx)

    async def drops(ctx: PassContext) -> Stop:
        return await edit_then(Stop.discarding_status(Result(requeue_after=1.0)), ctx)

    for step, written in ((writes, 1), (drops, 0)):
        world = World()
        world.rayservices.put(rayservice())
        reconciler = RayServiceReconciler(world.deps(), steps=[step])
        assert await reconciler.reconcile(Request(NS, NAME)) == Result(requeue_after=1.0)
        assert len(world.client.calls_of("update/status")) == written


async def test_a_deleted_service_is_forgotten() -> None:
    world = World()
    world.serve_cache.put(NS, NAME, "svc-a", "cfg")
    assert await RayServiceReconciler(world.deps()).reconcile(Request(NS, NAME)) == Result()
    assert world.serve_cache.get(NS, NAME, "svc-a") is None


async def test_the_requeue_follows_the_next_deletion_within_bounds() -> None:
    world = World()
    service = with_status(rayservice(), active="svc-a")
    world.add_cluster(cluster_of(service, "svc-a"))
    ctx = world.context(service)
    assert requeue_after(ctx) == 2.0
    ctx.next_deletion_in = 0.5
    assert requeue_after(ctx) == 0.5
    ctx.next_deletion_in = 0.0
    assert requeue_after(ctx) == 0.05
    ctx.next_deletion_in = 30.0
    assert requeue_after(ctx) == 2.0


async def test_a_service_that_does_not_parse_is_reported_and_left_alone() -> None:
    world = World()
    broken = rayservice()
    del broken["spec"]["rayClusterConfig"]
    world.rayservices.put(broken)
    assert await RayServiceReconciler(world.deps()).reconcile(Request(NS, NAME)) == Result()
    [(kind, reason, note)] = world.events()
    assert (kind, reason) == ("Warning", "InvalidRayServiceSpec")
    assert "rayClusterConfig" in note
    assert world.client.calls == []
