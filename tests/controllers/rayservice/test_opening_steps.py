"""The gate steps: own writes, managedBy, deletion and finalizer, validation."""

from __future__ import annotations

import copy

from rayop.controllers.rayservice import opening_steps
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import StatusEdits, Stop

from .rayservice_fakes import NAME, NS, World, cluster_of, rayservice

FINALIZER = "ray.io/rayservice-finalizer"


async def test_a_pass_waits_while_the_cache_predates_our_own_write() -> None:
    world = World()
    ctx = world.context(rayservice())
    written = copy.deepcopy(dict(ctx.cached))
    written["metadata"]["resourceVersion"] = "11"
    world.own_writes.record(written)
    stop = await opening_steps.wait_for_own_writes(ctx)
    assert stop == Stop(Result(requeue_after=2.0), StatusEdits.DISCARD)
    world.own_writes.observe(written)
    assert await opening_steps.wait_for_own_writes(world.context(written)) is None
    assert world.client.calls == []


async def test_another_manager_ends_the_pass_and_kuberay_does_not() -> None:
    world = World()
    other = world.context(rayservice(managedBy="kueue.x-k8s.io/multikueue"))
    assert await opening_steps.check_managed_by(other) == Stop.discarding_status()
    ours = world.context(rayservice(managedBy="ray.io/kuberay-operator"))
    assert await opening_steps.check_managed_by(ours) is None


async def test_the_finalizer_is_added_with_kuberays_typed_update() -> None:
    """KubeRay's ``r.Update`` of the typed RayService: the whole object at the cached
    resourceVersion, its spec as Go encodes it (zero-value structs written out)."""
    world = World()
    service = rayservice()
    service["metadata"]["finalizers"] = []
    ctx = world.context(service)
    assert await opening_steps.handle_deletion(ctx) is None
    [update] = world.client.calls_of("update", "RayService")
    assert update.body["metadata"]["finalizers"] == [FINALIZER]
    assert update.body["metadata"]["resourceVersion"] == "10"
    config = update.body["spec"]["rayClusterConfig"]
    head = config["headGroupSpec"]["template"]
    assert head["metadata"] == {} and head["spec"]["containers"][0]["resources"] == {}
    assert config["workerGroupSpecs"][0]["scaleStrategy"] == {}
    assert update.body["spec"]["serveConfigV2"] == service["spec"]["serveConfigV2"]
    assert world.client.calls_of("patch") == []
    assert world.own_writes.cache_behind(world.rayservices.get(NS, NAME) or {})


def test_the_typed_spec_is_what_go_writes_and_a_fixed_point() -> None:
    spec = rayservice(upgradeStrategy={"type": "NewCluster"}, extra="dropped")["spec"]
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"limits": {"cpu": "1000m"}}
    typed = opening_steps.typed_spec(spec)
    assert "extra" not in typed and typed["upgradeStrategy"] == {"type": "NewCluster"}
    typed_head = typed["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert typed_head["resources"] == {"limits": {"cpu": "1"}}  # Go's canonical quantity
    assert opening_steps.typed_spec(typed) == typed


async def test_deletion_deletes_every_owned_cluster_then_drops_the_finalizer() -> None:
    world = World()
    service = rayservice()
    service["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    world.add_cluster(cluster_of(service, "svc-a"))
    world.add_cluster(cluster_of(service, "svc-b", deletionTimestamp="2026-01-01T00:00:00Z"))
    world.serve_cache.put(NS, NAME, "svc-a", "cfg")
    stop = await opening_steps.handle_deletion(world.context(service))
    assert stop == Stop.discarding_status(Result(requeue_after=2.0))
    assert [(c.name, c.propagation_policy) for c in world.client.calls_of("delete")] == [
        ("svc-a", "Background")
    ]
    assert world.recorder.reasons() == ["DeletedRayCluster"]

    world.clusters.clear()
    assert await opening_steps.handle_deletion(world.context(service)) == Stop.discarding_status()
    [update] = world.client.calls_of("update", "RayService")
    assert update.body["metadata"]["finalizers"] == []
    assert world.serve_cache.get(NS, NAME, "svc-a") is None


async def test_deletion_without_our_finalizer_does_nothing() -> None:
    world = World()
    service = rayservice()
    service["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[])
    assert await opening_steps.handle_deletion(world.context(service)) == Stop.discarding_status()
    assert world.client.calls == []


async def test_an_invalid_spec_reports_validation_failed_and_asks_for_the_status_write() -> None:
    world = World()
    ctx = world.context(rayservice(upgradeStrategy={"type": "Sideways"}))
    stop = await opening_steps.validate(ctx)
    assert stop == Stop(Result(), StatusEdits.WRITE)
    [(kind, reason, note)] = world.events()
    assert (kind, reason) == ("Warning", "InvalidRayServiceSpec") and "Sideways" in note
    [ready] = ctx.status["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "False")
    assert ready["reason"] == "ValidationFailed"
    assert ready["lastTransitionTime"] == "2026-01-01T00:16:40Z"
    assert ctx.status["observedGeneration"] == 1 and ctx.status["serviceStatus"] == ""
    assert world.client.calls == []


async def test_a_valid_spec_goes_on() -> None:
    world = World()
    assert await opening_steps.validate(world.context(rayservice())) is None
    assert world.events() == []
