"""Running RayJobs with the background poller on fakes and virtual time: the same status
outcomes as a GET in every pass, no GET and no pass while nothing changes, a pass when the
job's answer changes or a deadline comes, no poller left once the job stops running, and no
pass that waits for the dashboard (its answers, the HTTPMode submission's too, enqueue the
RayJob)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rayop.api.common import format_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJobStatus
from rayop.controllers.dashboard.errors import DashboardUnavailable, SubmissionIdConflict
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


def cache_running(
    world: World, mode: str = "HTTPMode", *, failing_since: str | None = None, **spec: Any
) -> None:
    """Puts a Running RayJob (job ``job-id1``, RUNNING) into the server and the cache."""
    status = RayJobStatus(
        job_status_check_failure_start_time=failing_since,
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


async def settle() -> None:
    """Lets the background tasks run what is due (a GET, a POST) without moving the time."""
    for _ in range(10):
        await asyncio.sleep(0)


async def tick(world: World, seconds: float = 3.0) -> None:
    world.clock.step(seconds)
    await settle()


def watch(world: World) -> list[Any]:
    """Returns the list the poller's and the submissions' enqueues go to."""
    assert world.poller is not None and world.submissions is not None
    enqueued: list[Any] = []
    world.poller.on_change = enqueued.append
    world.submissions.on_done = enqueued.append
    return enqueued


async def first_answer(world: World, enqueued: list[Any]) -> Result:
    """The first pass (which starts the polling and waits for nothing), the first GET (which
    enqueues the RayJob), and the pass that reads it; returns that pass's result."""
    assert await reconcile(world) == Result(requeue_after=3.0)
    await settle()
    assert enqueued == [REQUEST]
    enqueued.clear()
    return await reconcile(world)


async def close(world: World) -> None:
    assert world.poller is not None and world.submissions is not None
    await world.poller.close()
    await world.submissions.close()


def last_status(world: World) -> dict[str, Any]:
    written = [c.body for c in world.client.calls if c.verb == "update/status"][-1]
    assert written is not None
    status: dict[str, Any] = written["status"]
    return status


async def test_a_running_job_costs_one_get_per_interval_and_no_pass() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    enqueued = watch(world)
    assert await reconcile(world) == Result(requeue_after=3.0)  # no answer yet: no wait
    assert world.dashboard.gets == 0 and enqueued == []
    await settle()
    assert world.dashboard.gets == 1 and enqueued == [REQUEST]  # the first answer enqueues
    enqueued.clear()
    result = await reconcile(world)
    assert result == Result(requeue_after=settings.RAYJOB_POLLED_RESYNC)
    assert world.dashboard.gets == 1 and world.poller is not None and len(world.poller) == 1
    calls = len(world.client.calls)  # the passes copied the cluster's status
    for _ in range(5):
        await tick(world)
    assert world.dashboard.gets == 6 and enqueued == []
    assert len(world.client.calls) == calls  # nothing changed: no pass, no API call
    await close(world)


async def test_a_finished_job_enqueues_its_rayjob_which_completes_and_stops_polling() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    enqueued = watch(world)
    await first_answer(world, enqueued)
    world.dashboard.jobs["job-id1"] = JobInfo(status="SUCCEEDED", start_time=1000, end_time=2000)
    await tick(world)
    assert enqueued == [REQUEST]
    assert await reconcile(world) == Result(requeue_after=3.0)
    status = last_status(world)
    assert status["jobDeploymentStatus"] == JobDeploymentStatus.COMPLETE
    assert status["jobStatus"] == JobStatus.SUCCEEDED
    assert world.poller is not None and len(world.poller) == 0
    await tick(world)
    assert world.dashboard.gets == 2 and not world.clock.has_sleepers()
    await close(world)


async def test_a_deleted_rayjob_leaves_no_poller() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    await first_answer(world, watch(world))
    assert world.poller is not None and len(world.poller) == 1
    world.rayjobs.clear()
    assert await reconcile(world) == Result()
    assert len(world.poller) == 0
    await tick(world)
    assert world.dashboard.gets == 1 and not world.clock.has_sleepers()
    await close(world)


async def test_a_gone_cluster_leaves_no_poller() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world)
    await first_answer(world, watch(world))
    world.clusters.clear()  # the poller notices at its next tick
    await tick(world)
    assert world.poller is not None
    assert len(world.poller) == 0 and not world.clock.has_sleepers()
    await close(world)


async def test_the_active_deadline_wakes_the_rayjob_on_time() -> None:
    world = polled_world()
    world.dashboard.jobs["job-id1"] = RUNNING
    cache_running(world, activeDeadlineSeconds=10)
    result = await first_answer(world, watch(world))
    assert result.requeue_after is not None and 10.0 <= result.requeue_after < 10.1
    world.clock.step(result.requeue_after)
    await reconcile(world)
    assert last_status(world)["reason"] == JobFailedReason.DEADLINE_EXCEEDED
    assert world.poller is not None and len(world.poller) == 0
    await close(world)


async def test_a_pass_waiting_for_an_answer_still_acts_on_the_active_deadline() -> None:
    world = polled_world()
    world.dashboard.error = DashboardUnavailable("connection refused")
    cache_running(world, activeDeadlineSeconds=10)
    assert await reconcile(world) == Result(requeue_after=3.0)  # the first GET is not sent yet
    world.clock.step(10.5)
    await reconcile(world)
    assert last_status(world)["reason"] == JobFailedReason.DEADLINE_EXCEEDED
    await close(world)


async def test_dashboard_errors_stamp_the_timer_and_wake_at_the_timeout() -> None:
    world = polled_world()
    world.dashboard.error = DashboardUnavailable("connection refused")
    cache_running(world)
    result = await first_answer(world, watch(world))
    status = last_status(world)
    assert status["jobStatusCheckFailureStartTime"] == format_time(world.clock.wall())
    timeout = world.options.rayjob_status_check_timeout_seconds
    assert result.requeue_after == min(settings.RAYJOB_POLLED_RESYNC, timeout + 0.01)
    await close(world)


async def test_an_old_error_is_read_again_before_the_pass_acts_on_it() -> None:
    world = polled_world()
    world.dashboard.error = DashboardUnavailable("connection refused")
    cache_running(world)
    enqueued = watch(world)
    await first_answer(world, enqueued)
    world.clock.step(1.0)  # within the interval: the latest answer is 1 s old
    assert await reconcile(world) == Result(requeue_after=3.0)  # asks for a new GET, waits
    await settle()
    assert world.dashboard.gets == 2 and enqueued == [REQUEST]  # sent at once; it enqueues
    await reconcile(world)
    assert world.dashboard.gets == 2  # the pass read the new answer, no GET of its own
    await close(world)


async def test_http_mode_submits_once_in_the_background_then_reads_a_fresh_answer() -> None:
    world = polled_world()
    cache_running(world)
    enqueued = watch(world)
    assert await first_answer(world, enqueued) == Result(requeue_after=3.0)  # 404: submits
    assert world.dashboard.submitted == []  # the POST runs outside the pass
    await settle()
    assert [r.submission_id for r in world.dashboard.submitted] == ["job-id1"]
    assert enqueued == [REQUEST]
    enqueued.clear()
    world.dashboard.jobs["job-id1"] = RUNNING
    await reconcile(world)  # reads the POST's outcome, asks for a new GET
    await settle()
    assert enqueued == [REQUEST]
    await reconcile(world)
    assert len(world.dashboard.submitted) == 1 and world.dashboard.gets == 2
    assert world.submissions is not None and len(world.submissions) == 0
    await close(world)


async def submit_ending(world: World, error: Exception | None) -> dict[str, Any]:
    """Runs an HTTPMode RayJob's passes until its POST (raising ``error``) ended and a pass
    read it; returns the status that pass wrote."""
    enqueued = watch(world)
    await first_answer(world, enqueued)  # 404: the POST starts
    world.dashboard.error = error
    await settle()
    assert enqueued == [REQUEST]
    world.dashboard.error = None
    assert await reconcile(world) == Result(requeue_after=3.0)
    return last_status(world)


async def test_a_submission_error_stamps_the_timer_and_the_next_404_submits_again() -> None:
    world = polled_world()
    cache_running(world)
    status = await submit_ending(world, DashboardUnavailable("connection refused"))
    assert status["jobStatusCheckFailureStartTime"] == format_time(world.clock.wall())
    assert world.dashboard.submitted == [] and world.dashboard.gets == 1
    assert await reconcile(world) == Result(requeue_after=3.0)  # the old 404: a new GET
    await settle()
    assert world.dashboard.gets == 2
    await reconcile(world)  # still 404: submits again
    await settle()
    assert [r.submission_id for r in world.dashboard.submitted] == ["job-id1"]
    await close(world)


async def test_an_already_used_submission_id_counts_as_submitted() -> None:
    world = polled_world()
    cache_running(world, failing_since=format_time(world.clock.wall()))
    status = await submit_ending(world, SubmissionIdConflict("job-id1"))
    assert "jobStatusCheckFailureStartTime" not in status  # as after an accepted POST
    assert status["jobDeploymentStatus"] == JobDeploymentStatus.RUNNING
    await close(world)


async def test_an_accepted_submission_clears_the_timer() -> None:
    world = polled_world()
    cache_running(world, failing_since=format_time(world.clock.wall()))
    status = await submit_ending(world, None)
    assert "jobStatusCheckFailureStartTime" not in status
    assert [r.submission_id for r in world.dashboard.submitted] == ["job-id1"]
    await close(world)


async def test_an_unexpected_submission_error_takes_the_error_path() -> None:
    world = polled_world()
    cache_running(world)
    enqueued = watch(world)
    await first_answer(world, enqueued)
    world.dashboard.error = RuntimeError("bug")
    await settle()
    with pytest.raises(RuntimeError, match="bug"):
        await reconcile(world)
    await close(world)


@pytest.mark.looptime
async def test_a_hanging_dashboard_holds_no_pass() -> None:
    world = polled_world()
    world.dashboard.hang = 3600.0
    cache_running(world)
    enqueued = watch(world)
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(3):  # the first GET, then the 404... none answers within the hour
        assert await reconcile(world) == Result(requeue_after=3.0)
        await asyncio.sleep(0)
    assert loop.time() - started < 1.0 and enqueued == []
    await close(world)


@pytest.mark.looptime
async def test_a_hanging_submission_holds_no_pass() -> None:
    world = polled_world()
    cache_running(world)
    enqueued = watch(world)
    await first_answer(world, enqueued)  # 404: the POST starts
    world.dashboard.hang = 3600.0
    loop = asyncio.get_running_loop()
    started = loop.time()
    for _ in range(3):
        assert await reconcile(world) == Result(requeue_after=3.0)
        await asyncio.sleep(0)
    assert loop.time() - started < 1.0 and world.dashboard.submitted == []
    await close(world)


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
    assert await first_answer(world, watch(world)) == Result(requeue_after=3.0)
    await close(world)


async def test_a_submission_stopped_before_it_runs_leaves_no_client_open() -> None:
    world = polled_world()
    cache_running(world)
    enqueued = watch(world)
    await first_answer(world, enqueued)  # 404: the POST's task is created, not yet run
    assert world.submissions is not None
    world.submissions.stop(REQUEST)  # the RayJob was deleted meanwhile
    await close(world)
    assert world.dashboard.submitted == []
    assert world.dashboard.closed == len(world.dashboard.opened)
