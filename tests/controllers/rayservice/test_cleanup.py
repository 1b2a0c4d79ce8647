"""Retiring clusters: the deletion schedule in an annotation, on the injected clock."""

from __future__ import annotations

import pytest

from rayop.controllers.rayservice import cleanup
from rayop.kube.errors import Conflict
from rayop.kube.resources import RAY_CLUSTERS

from .rayservice_fakes import World, cluster_of, rayservice, with_status

ANNOTATION = "ray.io/rayservice-deletion-timestamp"


async def test_a_retired_cluster_is_scheduled_then_deleted_when_due() -> None:
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=5), active="svc-new")
    world = World()
    world.add_cluster(cluster_of(service, "svc-new"))
    world.add_cluster(cluster_of(service, "svc-old"))
    ctx = world.context(service)
    assert await cleanup.cleanup_retired_clusters(ctx) is None
    [patch] = world.client.calls_of("patch", "RayCluster")
    assert patch.name == "svc-old"
    assert patch.body["metadata"]["annotations"][ANNOTATION] == "2026-01-01T00:16:45.000000Z"
    assert ctx.next_deletion_in == 5.0
    marked = world.client.stored(RAY_CLUSTERS, "ns", "svc-old")
    assert marked is not None
    world.clusters.put(marked)

    world.clock.step(3)
    ctx = world.context(service)
    await cleanup.cleanup_retired_clusters(ctx)
    assert world.client.calls_of("delete") == [] and ctx.next_deletion_in == 2.0

    world.clock.step(2)
    ctx = world.context(service)
    await cleanup.cleanup_retired_clusters(ctx)
    [delete] = world.client.calls_of("delete")
    assert (delete.name, delete.propagation_policy) == ("svc-old", "Background")
    assert world.recorder.reasons() == ["DeletedRayCluster"]
    assert ctx.next_deletion_in is None


async def test_a_due_cluster_that_a_service_still_selects_waits_for_the_service_to_move() -> None:
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=0), active="svc-new")
    world = World()
    world.add_cluster(cluster_of(service, "svc-new"))
    world.add_cluster(cluster_of(service, "svc-old"))
    serve = {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "svc-serve-svc", "namespace": "ns"},
             "spec": {"selector": {"ray.io/cluster": "svc-old"}}}
    world.services.put(serve)
    ctx = world.context(service)
    await cleanup.cleanup_retired_clusters(ctx)
    assert world.client.calls_of("delete") == []
    assert ctx.next_deletion_in == cleanup.SELECTED_RECHECK_SECONDS

    world.services.put({**serve, "spec": {"selector": {"ray.io/cluster": "svc-new"}}})
    marked = world.client.stored(RAY_CLUSTERS, "ns", "svc-old")
    assert marked is not None
    world.clusters.put(marked)
    ctx = world.context(service)
    await cleanup.cleanup_retired_clusters(ctx)
    [delete] = world.client.calls_of("delete")
    assert delete.name == "svc-old"


async def test_a_zero_delay_deletes_in_the_same_pass() -> None:
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=0), active="svc-new")
    world = World()
    world.add_cluster(cluster_of(service, "svc-old"))
    await cleanup.cleanup_retired_clusters(world.context(service))
    assert [c.verb for c in world.client.calls] == ["patch", "delete"]


async def test_a_cluster_in_use_again_loses_its_schedule() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    cluster = cluster_of(service, "svc-a")
    cluster["metadata"]["annotations"][ANNOTATION] = "2026-01-01T00:00:00Z"
    world.add_cluster(cluster)
    await cleanup.cleanup_retired_clusters(world.context(service))
    [patch] = world.client.calls_of("patch")
    assert patch.body == {"metadata": {"annotations": {ANNOTATION: None}}}
    assert world.client.calls_of("delete") == []


async def test_clusters_it_does_not_control_or_already_deleting_are_left_alone() -> None:
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=0), active="svc-a")
    world = World()
    stray = cluster_of(service, "svc-stray")
    stray["metadata"]["ownerReferences"] = []
    world.add_cluster(stray)
    world.add_cluster(cluster_of(service, "svc-gone", deletionTimestamp="2026-01-01T00:00:00Z"))
    await cleanup.cleanup_retired_clusters(world.context(service))
    assert world.client.calls == []


async def test_a_failed_delete_is_reported_and_raised() -> None:
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=0), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-old"))
    world.client.fail_next("delete", RuntimeError("boom"))
    try:
        await cleanup.cleanup_retired_clusters(world.context(service))
    except RuntimeError:
        pass
    else:
        raise AssertionError("the delete error was swallowed")
    assert world.recorder.reasons() == ["FailedToDeleteRayCluster"]


def _taken_over(world: World, name: str) -> None:
    """A user takes the cluster over in the server (drops its ownerReferences); the cache has
    not seen it yet."""
    stored = world.client.stored(RAY_CLUSTERS, "ns", name)
    assert stored is not None
    stored["metadata"].pop("ownerReferences", None)
    world.client.put(RAY_CLUSTERS, stored)


async def test_a_due_cluster_taken_over_after_the_caches_copy_is_not_deleted() -> None:
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=0), active="svc-new")
    world = World()
    old = cluster_of(service, "svc-old")
    old["metadata"]["annotations"][ANNOTATION] = "2026-01-01T00:00:00Z"  # already due
    world.add_cluster(old)
    _taken_over(world, "svc-old")
    with pytest.raises(Conflict):
        await cleanup.cleanup_retired_clusters(world.context(service))
    assert world.client.stored(RAY_CLUSTERS, "ns", "svc-old") is not None
    assert world.recorder.reasons() == []


async def test_a_cluster_found_taken_over_by_its_schedule_patch_is_not_deleted() -> None:
    """A zero delay deletes in the pass that schedules; the patch's answer is the newer copy,
    and a cluster it shows taken over is left alone."""
    service = with_status(rayservice(rayClusterDeletionDelaySeconds=0), active="svc-new")
    world = World()
    world.add_cluster(cluster_of(service, "svc-old"))
    _taken_over(world, "svc-old")
    await cleanup.cleanup_retired_clusters(world.context(service))
    assert [c.verb for c in world.client.calls] == ["patch"]
    assert world.client.stored(RAY_CLUSTERS, "ns", "svc-old") is not None
