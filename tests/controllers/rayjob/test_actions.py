"""The RayJob controller's API side effects on fakes: each idempotent, each with its Event, and
never a delete of something the RayJob does not control."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from rayop.api.rayjob import DeletionPolicyType, RayJobStatus
from rayop.controllers.rayjob import actions
from rayop.kube.errors import Conflict, Forbidden
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS

from .rayjob_fakes import World
from .rayjob_objects import CLUSTER, owned_cluster, rayjob_wire

NAMED = {"job_id": "job-id1", "ray_cluster_name": CLUSTER}


def unowned(obj: dict[str, Any]) -> dict[str, Any]:
    """Returns ``obj`` without its ownerReferences (a user took it over)."""
    obj["metadata"].pop("ownerReferences", None)
    return obj


async def test_write_status_is_an_own_write() -> None:
    world = World()
    cached = world.hold(world.rayjobs, world.client.put(RAY_JOBS, rayjob_wire()))
    ctx = world.context(cached)
    ctx.status = RayJobStatus(job_deployment_status="Initializing")
    await actions.write_status(ctx)
    assert world.client.verbs() == ["update/status"]
    assert world.own_writes.cache_behind(cached)
    assert ctx.rayjob["status"]["jobDeploymentStatus"] == "Initializing"


async def test_finalizer_is_added_and_removed_once() -> None:
    world = World()
    ctx = world.context(world.client.put(RAY_JOBS, rayjob_wire()))
    await actions.ensure_finalizer(ctx)
    await actions.ensure_finalizer(ctx)
    assert ctx.rayjob["metadata"]["finalizers"] == [actions.FINALIZER]
    await actions.remove_finalizer(ctx)
    await actions.remove_finalizer(ctx)
    assert world.client.verbs() == ["update", "update"]
    assert ctx.rayjob["metadata"]["finalizers"] == []


async def test_a_cluster_the_cache_has_not_seen_yet_is_read_from_the_api() -> None:
    world = World()
    world.client.put(RAY_CLUSTERS, owned_cluster())
    ctx = world.context(rayjob_wire(), **NAMED)
    cluster = await actions.get_or_create_cluster(ctx)
    assert cluster["metadata"]["name"] == CLUSTER
    assert world.client.verbs() == ["create", "get"]
    assert world.events() == []


async def test_a_refused_cluster_create_is_a_warning_and_an_error() -> None:
    world = World()
    world.client.fail_next("create", Forbidden({"code": 403, "message": "quota"}))
    ctx = world.context(rayjob_wire(), **NAMED)
    with pytest.raises(Forbidden):
        await actions.get_or_create_cluster(ctx)
    assert world.recorder.reasons() == ["FailedToCreateRayCluster"]


async def test_sidecar_mode_cluster_carries_the_submitter_container() -> None:
    world = World()
    ctx = world.context(rayjob_wire(submissionMode="SidecarMode"), **NAMED)
    created = await actions.get_or_create_cluster(ctx)
    head = created["spec"]["headGroupSpec"]["template"]["spec"]
    assert [c["name"] for c in head["containers"]] == ["ray-head", "ray-job-submitter"]
    assert head["restartPolicy"] == "Never"


async def test_submitter_job_is_created_once() -> None:
    world = World()
    cluster = owned_cluster()
    ctx = world.context(rayjob_wire(), **NAMED, dashboard_url="svc:8265")
    await actions.create_submitter_job_if_needed(ctx, cluster)
    await actions.create_submitter_job_if_needed(ctx, cluster)
    assert world.client.verbs() == ["create", "create"]
    assert world.recorder.reasons() == ["CreatedRayJobSubmitter"]
    world.jobs.put({"metadata": {"name": "job", "namespace": "ns"}})
    await actions.create_submitter_job_if_needed(ctx, cluster)
    assert world.client.verbs() == ["create", "create"]


async def test_head_service_is_created_then_moved_to_a_new_cluster() -> None:
    world = World()
    ctx = world.context(rayjob_wire(), **NAMED)
    await actions.reconcile_head_service(ctx, owned_cluster())
    created = world.client.calls[-1].body
    assert created is not None and created["metadata"]["name"] == "job-head-svc"
    world.services.put(created | {"spec": created["spec"] | {"clusterIP": "10.0.0.9"}})
    await actions.reconcile_head_service(ctx, owned_cluster())
    assert world.client.verbs() == ["create"], "the same cluster: no update"
    moved = owned_cluster()
    moved["metadata"]["name"] = "job-fghij"
    await actions.reconcile_head_service(ctx, moved)
    updated = world.client.calls[-1].body
    assert updated is not None and updated["spec"]["clusterIP"] == "10.0.0.9"
    assert updated["spec"]["selector"]["ray.io/cluster"] == "job-fghij"


async def test_auth_token_comes_from_the_cluster_secret() -> None:
    world = World()
    cluster = owned_cluster()
    cluster["spec"]["authOptions"] = {"mode": "token"}
    secret = {
        "metadata": {"name": CLUSTER, "namespace": "ns"},
        "data": {"auth_token": base64.b64encode(b"s3cret").decode()},
    }
    world.secrets.put(secret)
    ctx = world.context(rayjob_wire(), **NAMED)
    assert await actions.auth_token(ctx, owned_cluster()) is None
    assert await actions.auth_token(ctx, cluster) == "s3cret"


async def test_deleting_an_owned_cluster_waits_until_the_cache_drops_it() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    world.client.put(RAY_CLUSTERS, owned_cluster())
    ctx = world.context(rayjob_wire(), **NAMED)
    assert await actions.delete_cluster(ctx) is False
    world.clusters.put(owned_cluster(deletionTimestamp="2026-01-01T00:00:00Z"))
    assert await actions.delete_cluster(ctx) is False
    world.clusters.clear()
    assert await actions.delete_cluster(ctx) is True
    assert world.client.verbs() == ["delete"]
    assert world.recorder.reasons() == ["DeletedRayCluster"]


async def test_an_object_the_rayjob_does_not_control_is_never_deleted() -> None:
    world = World()
    world.clusters.put(unowned(owned_cluster()))
    world.jobs.put({"metadata": {"name": "job", "namespace": "ns"}})
    ctx = world.context(rayjob_wire(), **NAMED)
    assert await actions.delete_cluster(ctx) is True
    assert await actions.delete_submitter_job(ctx) is True
    assert world.client.calls == []
    assert world.recorder.reasons() == ["SkippedDeletingUnownedObject"] * 2


async def test_a_cluster_taken_over_after_the_caches_copy_is_not_deleted() -> None:
    """The cache still shows the cluster owned; the server's copy lost its ownerReference (a
    user took it over). The delete's preconditions (the cached uid and resourceVersion) fail:
    409, no event, nothing deleted; once the cache shows the new copy, a Warning and no
    delete."""
    world = World()
    stored = world.client.put(RAY_CLUSTERS, owned_cluster())
    world.clusters.put(stored)
    taken = unowned(owned_cluster())
    taken["metadata"]["uid"] = stored["metadata"]["uid"]  # the same object, a newer version
    world.client.put(RAY_CLUSTERS, taken)
    ctx = world.context(rayjob_wire(), **NAMED)
    with pytest.raises(Conflict):
        await actions.delete_cluster(ctx)
    assert world.client.stored(RAY_CLUSTERS, "ns", CLUSTER) is not None
    assert world.recorder.reasons() == []
    world.clusters.put(world.client.stored(RAY_CLUSTERS, "ns", CLUSTER) or {})
    assert await actions.delete_cluster(ctx) is True
    assert world.client.stored(RAY_CLUSTERS, "ns", CLUSTER) is not None
    assert world.recorder.reasons() == ["SkippedDeletingUnownedObject"]


async def test_a_selected_cluster_is_never_deleted() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    ctx = world.context(rayjob_wire(clusterSelector={"ray.io/cluster": CLUSTER}), **NAMED)
    assert await actions.delete_cluster(ctx) is True
    assert world.client.calls == []


async def test_delete_workers_suspends_every_group_once() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    ctx = world.context(rayjob_wire(), **NAMED)
    assert not actions.deletion_done(ctx, DeletionPolicyType.DELETE_WORKERS)
    await actions.execute_deletion(ctx, DeletionPolicyType.DELETE_WORKERS)
    updated = world.client.calls[-1].body
    assert updated is not None
    assert [g["suspend"] for g in updated["spec"]["workerGroupSpecs"]] == [True]
    world.clusters.put(updated)
    assert actions.deletion_done(ctx, DeletionPolicyType.DELETE_WORKERS)
    assert not actions.deletion_done(ctx, DeletionPolicyType.DELETE_CLUSTER)
    assert world.recorder.reasons() == ["SuspendedWorkerGroups"]


async def test_delete_self_deletes_the_rayjob_in_the_background() -> None:
    world = World()
    world.client.put(RAY_JOBS, rayjob_wire())
    ctx = world.context(rayjob_wire(), **NAMED)
    await actions.execute_deletion(ctx, DeletionPolicyType.DELETE_SELF)
    assert [(c.verb, c.resource, c.propagation_policy) for c in world.client.calls] == [
        ("delete", "rayjobs", "Background")
    ]
    assert world.client.stored(RAY_JOBS, "ns", "job") is None
