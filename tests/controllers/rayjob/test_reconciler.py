"""One RayJob pass on fakes: the own-writes rule, managedBy, deletion, validation, and what
happens to the status edits when a phase runs to its end or stops early."""

from __future__ import annotations

from typing import Any

from rayop.api.common import format_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, RayJobStatus
from rayop.controllers.dashboard.errors import DashboardUnavailable
from rayop.controllers.rayjob.actions import FINALIZER
from rayop.kube.resources import RAY_JOBS
from rayop.runtime.reconcile import Request, Result

from .rayjob_fakes import World
from .rayjob_objects import CLUSTER, owned_cluster, rayjob_wire

REQUEST = Request("ns", "job")


def cached(world: World, wire: dict[str, Any], **status: Any) -> dict[str, Any]:
    """Puts ``wire`` (with ``status`` fields) into the server and the cache, as after a watch
    event; returns the cached copy."""
    if status:
        wire = wire | {
            "status": RayJobStatus(**status).model_dump(by_alias=True, exclude_none=True)
        }
    return world.hold(world.rayjobs, world.client.put(RAY_JOBS, wire))


def written_status(world: World) -> dict[str, Any]:
    """Returns the status of the last status write."""
    body = [c.body for c in world.client.calls if c.verb == "update/status"][-1]
    assert body is not None
    status: dict[str, Any] = body["status"]
    return status


async def test_a_gone_rayjob_is_done() -> None:
    world = World()
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.client.calls == []


async def test_a_new_rayjob_gets_its_finalizer_and_names_then_requeues_in_3_s() -> None:
    world = World()
    wire = rayjob_wire()
    wire["metadata"]["generation"] = 3
    cached(world, wire)
    result = await world.reconciler().reconcile(REQUEST)
    assert result == Result(requeue_after=3.0)
    assert world.client.verbs() == ["update", "update/status"]
    status = written_status(world)
    assert status["jobDeploymentStatus"] == "Initializing"
    assert status["startTime"] == format_time(world.clock.wall())
    assert status["observedGeneration"] == 3
    update = world.client.calls[0].body
    assert update is not None and FINALIZER in update["metadata"]["finalizers"]


async def test_a_pass_never_works_from_a_cache_behind_its_own_last_write() -> None:
    world = World()
    stale = cached(world, rayjob_wire())
    await world.reconciler().reconcile(REQUEST)
    calls = len(world.client.calls)
    result = await world.reconciler().reconcile(REQUEST)
    assert result == Result(requeue_after=3.0)
    assert len(world.client.calls) == calls, "no write based on the stale copy"
    caught_up: list[str] = []
    world.own_writes.on_caught_up = lambda obj: caught_up.append(obj["metadata"]["name"])
    latest = world.client.stored(RAY_JOBS, "ns", "job")
    assert latest is not None
    world.rayjobs.put(latest)
    world.own_writes.observe(latest)
    assert caught_up == ["job"]
    assert stale["metadata"]["resourceVersion"] != latest["metadata"]["resourceVersion"]
    await world.reconciler().reconcile(REQUEST)
    assert len(world.client.calls) > calls


async def test_a_stale_entry_expires_after_the_tracker_timeout() -> None:
    world = World()
    cached(world, rayjob_wire())
    await world.reconciler().reconcile(REQUEST)
    calls = len(world.client.calls)
    world.clock.step(10)
    await world.reconciler().reconcile(REQUEST)
    assert len(world.client.calls) > calls


async def test_a_rayjob_managed_by_multikueue_is_left_alone() -> None:
    world = World()
    cached(world, rayjob_wire(managedBy="kueue.x-k8s.io/multikueue"))
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.client.calls == []


async def test_an_invalid_rayjob_is_marked_validation_failed_once() -> None:
    world = World()
    cached(world, rayjob_wire(submissionMode="Telepathy"))
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.recorder.reasons() == ["InvalidRayJobSpec"]
    status = written_status(world)
    assert status["jobDeploymentStatus"] == "ValidationFailed"
    assert status["reason"] == JobFailedReason.VALIDATION_FAILED
    assert "Telepathy" in status["message"]
    written = world.client.stored(RAY_JOBS, "ns", "job")
    assert written is not None
    world.rayjobs.put(written)
    world.client.calls.clear()
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.client.calls == [], "the same status is not written again"


async def test_deleting_stops_the_ray_job_and_drops_the_finalizer() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    wire = rayjob_wire()
    wire["metadata"] |= {"finalizers": [FINALIZER], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    cached(
        world,
        wire,
        job_id="job-id1",
        ray_cluster_name=CLUSTER,
        job_status="RUNNING",
        job_deployment_status=JobDeploymentStatus.RUNNING,
    )
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.dashboard.stopped == ["job-id1"]
    assert world.client.verbs() == ["update"]
    update = world.client.calls[0].body
    assert update is not None and update["metadata"]["finalizers"] == []


async def test_deleting_survives_an_unreachable_dashboard() -> None:
    world = World()
    world.dashboard.error = DashboardUnavailable("no endpoints")
    world.clusters.put(owned_cluster())
    wire = rayjob_wire()
    wire["metadata"] |= {"finalizers": [FINALIZER], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    cached(world, wire, job_id="job-id1", ray_cluster_name=CLUSTER, job_status="RUNNING")
    assert await world.reconciler().reconcile(REQUEST) == Result()
    assert world.client.verbs() == ["update"]


async def test_a_phase_that_stops_early_drops_its_edits() -> None:
    """Initializing on a ready cluster whose head Service is not cached yet: KubeRay returns
    before writing, so the copied cluster status is not written."""
    world = World()
    world.clusters.put(owned_cluster())
    cached(
        world,
        rayjob_wire(),
        job_id="job-id1",
        ray_cluster_name=CLUSTER,
        start_time=format_time(world.clock.wall()),
        job_deployment_status=JobDeploymentStatus.INITIALIZING,
    )
    assert await world.reconciler().reconcile(REQUEST) == Result(requeue_after=3.0)
    assert world.client.calls == []


async def test_a_failure_within_the_backoff_limit_is_retried() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    cached(
        world,
        rayjob_wire(submissionMode="SidecarMode", backoffLimit=1),
        job_id="job-id1",
        ray_cluster_name=CLUSTER,
        start_time=format_time(world.clock.wall()),
        job_deployment_status=JobDeploymentStatus.RUNNING,
    )
    assert await world.reconciler().reconcile(REQUEST) == Result(requeue_after=3.0)
    status = written_status(world)
    assert status["jobDeploymentStatus"] == "Retrying"
    assert status["failed"] == 1
    assert "endTime" not in status


async def test_an_unknown_deployment_status_is_looked_at_again_in_3_s() -> None:
    world = World()
    cached(world, rayjob_wire(), job_deployment_status="Levitating")
    assert await world.reconciler().reconcile(REQUEST) == Result(requeue_after=3.0)
    assert world.client.calls == []


async def test_a_validation_failure_is_written_without_the_phase_stamps() -> None:
    world = World()
    wire = rayjob_wire(submissionMode="Telepathy")
    wire["metadata"]["generation"] = 2
    cached(world, wire)
    await world.reconciler().reconcile(REQUEST)
    status = written_status(world)
    assert "observedGeneration" not in status and "endTime" not in status
