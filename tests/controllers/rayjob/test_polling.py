"""Running RayJobs with the background poller on fakes and virtual time: the same status
outcomes as a GET in every pass, no GET and no pass while nothing changes, a pass when the
job's answer changes or a deadline comes, and no poller left once the job stops running."""

from __future__ import annotations

import asyncio
from typing import Any

from rayop.api.common import format_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJobStatus
from rayop.controllers.dashboard.errors import DashboardUnavailable
from rayop.controllers.dashboard.models import JobInfo
from rayop.controllers.kit import settings
from rayop.kube.resources import RAY_JOBS
from rayop.runtime.reconcile import Request, Result

from .rayjob_fakes import World
from .rayjob_objects import CLUSTER, DASHBOARD_URL, head_service, owned_cluster, rayjob_wire

REQUEST = Request("ns", "job")
RUNNING = JobInfo(status="RUNNING", message="Job is currently running.", start_time=1000)


def polled_world() -> World:
    """A world whose passes read a 3 s poller, with a ready cluster and its head service."""
    world = World(poll_interval=3.0)
    world.clusters.put(owned_cluster(uid="c-1"))
    world.services.put(head_service())
    return world


def cache_running(world: World, mode: str = "HTTPMode", **spec: Any) -> None:
    """Puts a Running RayJob (job ``job-id1``, RUNNING) into the server and the cache."""
    status = RayJobStatus(
        job_id="job-id1",
        ray_cluster_name=CLUSTER,
        start_time=format_time(world.clock.wall()),
        job_deployment_status=JobDeploymentStatus.RUNNING,
        job_status=JobStatus.RUNNING,
        dashboard_url=DASHBOARD_URL,
    )
    wire = rayjob_wire(submissionMode=mode, **spec) | {
        "status": status.model_dump(by_alias=True, exclude_none=True)
    }
    world.rayjobs.put(world.client.put(RAY_JOBS, wire))


async def reconcile(world: World) -> Result:
    """One pass; then the cache shows what the server holds, as after the watch event."""
    result = await world.reconciler().reconcile(REQUEST)
    stored = world.client.stored(RAY_JOBS, "ns", "job")
    if stored is not None and world.rayjobs.get("ns", "job") is not None:
        world.rayjobs.put(stored)
    return result


async def tick(world: World, seconds: float = 3.0) -> None:
    world.clock.step(seconds)
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_running_job_costs_one_get_per_interval_and_no_pass() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    assert world.poller is not None
    enqueued: list[Any] = []
    world.poller.on_change = enqueued.append
    result = await reconcile(world)
    assert result == Result(requeue_after=settings.RAYJOB_POLLED_RESYNC)
    assert world.dashboard.gets == 1 and len(world.poller) == 1
    calls = len(world.client.calls)  # the first pass copied the cluster's status
    for _ in range(5):
        await tick(world)
    assert world.dashboard.gets == 6 and enqueued == []
    assert len(world.client.calls) == calls  # nothing changed: no pass, no API call
    await world.poller.close()


async def test_a_finished_job_enqueues_its_rayjob_which_completes_and_stops_polling() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    assert world.poller is not None
    enqueued: list[Any] = []
    world.poller.on_change = enqueued.append
    await reconcile(world)
    world.dashboard.jobs["job-id1"] = JobInfo(status="SUCCEEDED", start_time=1000, end_time=2000)
    await tick(world)
    assert enqueued == [REQUEST]
    assert await reconcile(world) == Result(requeue_after=3.0)
    written = [c.body for c in world.client.calls if c.verb == "update/status"][-1]
    assert written is not None
    assert written["status"]["jobDeploymentStatus"] == JobDeploymentStatus.COMPLETE
    assert written["status"]["jobStatus"] == JobStatus.SUCCEEDED
    assert len(world.poller) == 0
    await tick(world)
    assert world.dashboard.gets == 2 and not world.clock.has_sleepers()
    await world.poller.close()


async def test_a_deleted_rayjob_leaves_no_poller() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    assert world.poller is not None
    await reconcile(world)
    assert len(world.poller) == 1
    world.rayjobs.clear()
    assert await reconcile(world) == Result()
    assert len(world.poller) == 0
    await tick(world)
    assert world.dashboard.gets == 1 and not world.clock.has_sleepers()
    await world.poller.close()


async def test_a_gone_cluster_leaves_no_poller() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    assert world.poller is not None
    await reconcile(world)
    world.clusters.clear()  # the poller notices at its next tick
    await tick(world)
    assert len(world.poller) == 0 and not world.clock.has_sleepers()
    await world.poller.close()


async def test_the_active_deadline_wakes_the_rayjob_on_time() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world, activeDeadlineSeconds=10)
    result = await reconcile(world)
    assert result.requeue_after is not None and 10.0 <= result.requeue_after < 10.1
    world.clock.step(result.requeue_after)
    await reconcile(world)
    written = [c.body for c in world.client.calls if c.verb == "update/status"][-1]
    assert written is not None and written["status"]["reason"] == JobFailedReason.DEADLINE_EXCEEDED
    assert world.poller is not None and len(world.poller) == 0
    await world.poller.close()


async def test_dashboard_errors_stamp_the_timer_and_wake_at_the_timeout() -> None:
    world = polled_world()
    world.dashboard.error = DashboardUnavailable("connection refused")
    cache_running(world)
    result = await reconcile(world)
    written = [c.body for c in world.client.calls if c.verb == "update/status"][-1]
    assert written is not None
    assert written["status"]["jobStatusCheckFailureStartTime"] == format_time(world.clock.wall())
    timeout = world.options.rayjob_status_check_timeout_seconds
    assert result.requeue_after == min(settings.RAYJOB_POLLED_RESYNC, timeout + 0.01)
    assert world.poller is not None
    await world.poller.close()


async def test_http_mode_submits_once_then_reads_a_fresh_answer() -> None:
    world = polled_world()
    cache_running(world)
    await reconcile(world)  # 404: submitted
    assert [r.submission_id for r in world.dashboard.submitted] == ["job-id1"]
    world.dashboard.jobs["job-id1"] = RUNNING
    for _ in range(5):
        await asyncio.sleep(0)
    await reconcile(world)
    assert len(world.dashboard.submitted) == 1 and world.dashboard.gets == 2
    assert world.poller is not None
    await world.poller.close()


async def test_sidecar_mode_keeps_the_3_s_requeue() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    world.pods.put(
        {
            "metadata": {
                "name": "head",
                "namespace": "ns",
                "labels": {"ray.io/cluster": CLUSTER, "ray.io/node-type": "head"},
            },
            "status": {"containerStatuses": [{"name": "ray-job-submitter", "state": {}}]},
        }
    )
    cache_running(world, mode="SidecarMode")
    assert await reconcile(world) == Result(requeue_after=3.0)
    assert world.poller is not None
    await world.poller.close()
