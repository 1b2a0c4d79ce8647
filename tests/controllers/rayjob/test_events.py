"""The events KubeRay v1.7's RayJob controller records, at the same points and with its words."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api.rayjob import RayJobStatus
from rayop.controllers.rayjob import actions
from rayop.controllers.rayjob.actions import ClusterNotFoundError
from rayop.kube.errors import Forbidden
from rayop.kube.resources import JOBS, RAY_JOBS
from rayop.runtime.reconcile import Request, Result

from .rayjob_fakes import World
from .rayjob_objects import CLUSTER, owned_cluster, rayjob_wire

NAMED = {"job_id": "job-id1", "ray_cluster_name": CLUSTER}
REQUEST = Request("ns", "job")


def _cached(world: World, wire: dict[str, Any], **status: Any) -> None:
    if status:
        wire = wire | {
            "status": RayJobStatus(**status).model_dump(by_alias=True, exclude_none=True)
        }
    world.rayjobs.put(world.client.put(RAY_JOBS, wire))


async def test_a_missing_selected_cluster_is_a_raycluster_not_found_event() -> None:
    world = World()
    wire = rayjob_wire(clusterSelector={"ray.io/cluster": "mine"})
    del wire["spec"]["rayClusterSpec"]
    ctx = world.context(wire, job_id="job-id1", ray_cluster_name="mine")
    with pytest.raises(ClusterNotFoundError, match="clusterSelector mode is enabled"):
        await actions.get_or_create_cluster(ctx)
    assert world.events() == [
        (
            "Warning",
            "RayClusterNotFound",
            "RayCluster ns/mine set in the clusterSelector is not found. It must be created "
            "manually",
        )
    ]
    assert world.client.calls == [], "a selected cluster is never created"


async def test_a_failed_submitter_delete_is_a_warning_and_an_error() -> None:
    world = World()
    job = {
        "metadata": {
            "name": "job",
            "namespace": "ns",
            "ownerReferences": [{"kind": "RayJob", "uid": "uid-1", "controller": True}],
        }
    }
    world.jobs.put(world.client.put(JOBS, job))
    world.client.fail_next("delete", Forbidden({"code": 403, "message": "denied"}))
    ctx = world.context(rayjob_wire(), **NAMED)
    with pytest.raises(Forbidden):
        await actions.delete_submitter_job(ctx)
    assert world.events() == [
        (
            "Warning",
            "FailedToDeleteRayJobSubmitter",
            "Failed to delete submitter K8s Job ns/job: denied",
        )
    ]
    assert await actions.delete_submitter_job(ctx) is False
    assert world.events()[-1] == (
        "Normal",
        "DeletedRayJobSubmitter",
        "Deleted submitter K8s Job ns/job",
    )


async def test_a_failed_head_service_update_is_a_warning_and_an_error() -> None:
    world = World()
    ctx = world.context(rayjob_wire(), **NAMED)
    await actions.reconcile_head_service(ctx, owned_cluster())
    created = world.client.calls[-1].body
    assert created is not None
    world.services.put(created)
    moved = owned_cluster()
    moved["metadata"]["name"] = "job-fghij"
    world.client.fail_next("update", Forbidden({"code": 403, "message": "immutable"}))
    with pytest.raises(Forbidden):
        await actions.reconcile_head_service(ctx, moved)
    await actions.reconcile_head_service(ctx, moved)
    assert world.events() == [
        ("Normal", "CreatedService", "Created the service ns/job-head-svc"),
        (
            "Warning",
            "FailedToUpdateService",
            "Failed to update the service ns/job-head-svc, immutable",
        ),
        ("Normal", "UpdatedService", "Updated the service ns/job-head-svc"),
    ]


async def test_an_inconsistent_status_is_invalid_rayjob_status() -> None:
    world = World()
    _cached(world, rayjob_wire(), jobDeploymentStatus="Waiting")
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.events() == [
        (
            "Warning",
            "InvalidRayJobStatus",
            "ns/job: The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when "
            "SubmissionMode is not InteractiveMode",
        )
    ]


async def test_an_invalid_name_is_invalid_rayjob_metadata() -> None:
    world = World()
    wire = rayjob_wire()
    wire["spec"]["backoffLimit"] = -1
    world.rayjobs.put(world.client.put(RAY_JOBS, wire))
    cached = world.rayjobs.get("ns", "job")
    assert cached is not None
    long_name = "j" * 48
    renamed = {**cached, "metadata": {**cached["metadata"], "name": long_name}}
    world.rayjobs.put(world.client.put(RAY_JOBS, renamed))
    assert await world.reconciler().reconcile(Request("ns", long_name)) == Result()
    (event,) = world.events()
    assert event == (
        "Warning",
        "InvalidRayJobMetadata",
        f"ns/{long_name}: The RayJob metadata is invalid: RayJob name should be no more than 47 "
        "characters",
    )
