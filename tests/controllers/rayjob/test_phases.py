"""Each RayJob phase handler on fakes and virtual time: its status edits, its API calls, and
what it says about the pass (go on and write, or stop and drop the edits)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from rayop.api.common import format_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus
from rayop.controllers.dashboard.errors import DashboardUnavailable
from rayop.controllers.dashboard.models import JobInfo
from rayop.controllers.rayjob import phases
from rayop.controllers.rayjob.actions import FINALIZER, ClusterNotFoundError
from rayop.controllers.rayjob.context import PassContext
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.steps import StatusEdits

from .rayjob_fakes import World
from .rayjob_objects import CLUSTER, DASHBOARD_URL, head_service, owned_cluster, rayjob_wire


def started(world: World, **status: Any) -> dict[str, Any]:
    """Returns status fields of a RayJob that started at the world's wall time."""
    base = {
        "job_id": "job-id1",
        "ray_cluster_name": CLUSTER,
        "start_time": format_time(world.clock.wall()),
    }
    return base | status


async def test_new_adds_the_finalizer_then_names_the_job_and_cluster() -> None:
    world = World()
    ctx = world.context(rayjob_wire())
    assert await phases.on_new(ctx) is None
    assert world.client.verbs() == ["update"]
    assert FINALIZER in ctx.rayjob["metadata"]["finalizers"]
    assert world.own_writes.cache_behind(rayjob_wire()), "the update is an own write"
    assert not world.own_writes.cache_behind(ctx.rayjob)
    assert ctx.status.job_deployment_status == JobDeploymentStatus.INITIALIZING
    assert ctx.status.job_id and ctx.status.ray_cluster_name
    assert ctx.status.start_time == format_time(world.clock.wall())


async def test_initializing_suspend_goes_first() -> None:
    world = World()
    ctx = world.context(
        rayjob_wire(suspend=True, shutdownAfterJobFinishes=True),
        **started(world, job_deployment_status=JobDeploymentStatus.INITIALIZING),
    )
    assert await phases.on_initializing(ctx) is None
    assert ctx.status.job_deployment_status == JobDeploymentStatus.SUSPENDING
    assert world.client.calls == []


async def test_initializing_pre_running_deadline_on_virtual_time() -> None:
    world = World()
    wire = rayjob_wire(preRunningDeadlineSeconds=30)
    fields = started(world, job_deployment_status=JobDeploymentStatus.INITIALIZING)
    world.clock.step(29)
    world.clusters.put(owned_cluster(state=""))
    assert await phases.on_initializing(world.context(wire, **fields)) is None
    world.clock.step(1)
    ctx = world.context(wire, **fields)
    assert await phases.on_initializing(ctx) is None
    assert ctx.status.job_deployment_status == JobDeploymentStatus.FAILED
    assert ctx.status.reason == JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED


async def test_initializing_creates_the_cluster_and_waits_for_it() -> None:
    world = World()
    ctx = world.context(
        rayjob_wire(), **started(world, job_deployment_status=JobDeploymentStatus.INITIALIZING)
    )
    assert await phases.on_initializing(ctx) is None
    assert [(c.verb, c.resource, c.name) for c in world.client.calls] == [
        ("create", "rayclusters", CLUSTER)
    ]
    assert world.recorder.reasons() == ["CreatedRayCluster"]
    assert ctx.status.job_deployment_status == JobDeploymentStatus.INITIALIZING
    assert not ctx.status.dashboard_url


async def test_initializing_without_head_service_waits_and_drops_its_edits() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    ctx = world.context(
        rayjob_wire(), **started(world, job_deployment_status=JobDeploymentStatus.INITIALIZING)
    )
    stop = await phases.on_initializing(ctx)
    assert stop is phases.WAIT
    assert stop.status is StatusEdits.DISCARD and stop.result.requeue_after == 3.0


@pytest.mark.parametrize(
    ("mode", "expected", "verbs"),
    [
        ("K8sJobMode", JobDeploymentStatus.RUNNING, ["create"]),
        ("HTTPMode", JobDeploymentStatus.RUNNING, []),
        ("InteractiveMode", JobDeploymentStatus.WAITING, []),
    ],
)
async def test_initializing_a_ready_cluster_starts_the_submission(
    mode: str, expected: str, verbs: list[str]
) -> None:
    world = World()
    world.clusters.put(owned_cluster())
    world.services.put(head_service())
    ctx = world.context(
        rayjob_wire(submissionMode=mode),
        **started(world, job_deployment_status=JobDeploymentStatus.INITIALIZING),
    )
    assert await phases.on_initializing(ctx) is None
    assert ctx.status.dashboard_url == DASHBOARD_URL
    assert ctx.status.job_deployment_status == expected
    assert world.client.verbs("Job") == verbs
    assert ctx.status.ray_cluster_status is not None
    assert ctx.status.ray_cluster_status.state == "ready"


async def test_initializing_a_missing_selected_cluster_is_an_error() -> None:
    world = World()
    wire = rayjob_wire(clusterSelector={"ray.io/cluster": "theirs"})
    del wire["spec"]["rayClusterSpec"]
    ctx = world.context(
        wire,
        **started(
            world,
            ray_cluster_name="theirs",
            job_deployment_status=JobDeploymentStatus.INITIALIZING,
        ),
    )
    with pytest.raises(ClusterNotFoundError):
        await phases.on_initializing(ctx)
    assert world.client.calls == []


async def test_waiting_until_the_user_sets_the_job_id() -> None:
    world = World()
    fields = started(world, job_id=None, job_deployment_status=JobDeploymentStatus.WAITING)
    wire = rayjob_wire(submissionMode="InteractiveMode")
    assert await phases.on_waiting(world.context(wire, **fields)) is phases.WAIT
    ctx = world.context(rayjob_wire(submissionMode="InteractiveMode", jobId="mine"), **fields)
    assert await phases.on_waiting(ctx) is None
    assert ctx.status.job_id == "mine"
    assert ctx.status.job_deployment_status == JobDeploymentStatus.RUNNING


def running(world: World, mode: str = "HTTPMode", **status: Any) -> PassContext:
    """Returns a Running pass in ``mode`` over a ready cluster with its head service."""
    world.clusters.put(owned_cluster())
    world.services.put(head_service())
    fields = started(
        world,
        job_deployment_status=JobDeploymentStatus.RUNNING,
        dashboard_url=DASHBOARD_URL,
        **status,
    )
    return world.context(rayjob_wire(submissionMode=mode), **fields)


async def test_running_copies_a_finished_job_and_completes() -> None:
    world = World()
    world.dashboard.jobs["job-id1"] = JobInfo(status="SUCCEEDED", start_time=1000, end_time=2000)
    ctx = running(world)
    assert await phases.on_running(ctx) is None
    assert ctx.status.job_deployment_status == JobDeploymentStatus.COMPLETE
    assert ctx.status.job_status == JobStatus.SUCCEEDED
    assert ctx.status.ray_job_info is not None and ctx.status.ray_job_info.end_time
    assert world.dashboard.opened == [(DASHBOARD_URL, None)]
    assert world.client.verbs("Service") == ["create"]


async def test_running_http_mode_submits_a_job_the_dashboard_does_not_know() -> None:
    world = World()
    since = format_time(world.clock.wall())
    ctx = running(world, job_status_check_failure_start_time=since)
    assert await phases.on_running(ctx) is None
    assert [r.submission_id for r in world.dashboard.submitted] == ["job-id1"]
    assert ctx.status.job_status_check_failure_start_time is None


async def test_running_k8s_mode_waits_for_the_submitter_to_submit() -> None:
    world = World()
    ctx = running(world, mode="K8sJobMode")
    assert await phases.on_running(ctx) is phases.WAIT
    assert world.dashboard.submitted == []


async def test_running_dashboard_errors_start_the_failure_timer_then_time_out() -> None:
    world = World()
    world.dashboard.error = DashboardUnavailable("connection refused")
    ctx = running(world)
    assert await phases.on_running(ctx) is None
    since = ctx.status.job_status_check_failure_start_time
    assert since == format_time(world.clock.wall())
    timeout = world.options.rayjob_status_check_timeout_seconds
    world.clock.step(timeout)
    ctx = running(world, job_status_check_failure_start_time=since)
    assert await phases.on_running(ctx) is None
    assert ctx.status.reason == JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED


async def test_running_failed_submitter_job_fails_the_rayjob() -> None:
    world = World()
    condition = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
    world.jobs.put(
        {"metadata": {"name": "job", "namespace": "ns"}, "status": {"conditions": [condition]}}
    )
    ctx = running(world, mode="K8sJobMode")
    assert await phases.on_running(ctx) is None
    assert ctx.status.job_deployment_status == JobDeploymentStatus.FAILED
    assert ctx.status.reason == JobFailedReason.SUBMISSION_FAILED
    assert world.dashboard.opened == []


async def test_running_sidecar_without_head_pod_fails() -> None:
    world = World()
    ctx = running(world, mode="SidecarMode")
    assert await phases.on_running(ctx) is None
    assert ctx.status.job_deployment_status == JobDeploymentStatus.FAILED
    assert ctx.status.message == "Ray head pod not found."


async def test_running_submitter_finished_long_ago_fails() -> None:
    world = World()
    finished = format_time(world.clock.wall() - timedelta(seconds=31))
    condition = {"type": "Complete", "status": "True", "lastTransitionTime": finished}
    world.jobs.put(
        {"metadata": {"name": "job", "namespace": "ns"}, "status": {"conditions": [condition]}}
    )
    ctx = running(world, mode="K8sJobMode", job_status=JobStatus.RUNNING)
    assert await phases.on_running(ctx) is None
    assert ctx.status.reason == JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED


@pytest.mark.parametrize(
    ("phase", "after"),
    [
        (JobDeploymentStatus.SUSPENDING, JobDeploymentStatus.SUSPENDED),
        (JobDeploymentStatus.RETRYING, JobDeploymentStatus.NEW),
    ],
)
async def test_suspending_and_retrying_delete_then_reset(phase: str, after: str) -> None:
    world = World()
    world.clusters.put(owned_cluster())
    world.client.put(RAY_CLUSTERS, owned_cluster())
    fields = started(world, job_deployment_status=phase)
    ctx = world.context(rayjob_wire(), **fields)
    assert await phases.on_suspending_or_retrying(ctx) is phases.WAIT
    assert [(c.verb, c.resource) for c in world.client.calls] == [("delete", "rayclusters")]
    world.clusters.clear()
    ctx = world.context(rayjob_wire(), **fields)
    assert await phases.on_suspending_or_retrying(ctx) is None
    assert ctx.status.job_deployment_status == after
    assert ctx.status.ray_cluster_name is None and ctx.status.job_id is None


async def test_suspended_stays_until_resumed() -> None:
    world = World()
    fields = {"job_deployment_status": JobDeploymentStatus.SUSPENDED}
    wire = rayjob_wire(suspend=True, shutdownAfterJobFinishes=True)
    assert await phases.on_suspended(world.context(wire, **fields)) is phases.IDLE
    ctx = world.context(rayjob_wire(shutdownAfterJobFinishes=True), **fields)
    assert await phases.on_suspended(ctx) is None
    assert ctx.status.job_deployment_status == JobDeploymentStatus.NEW


async def test_finished_deletes_the_cluster_after_the_ttl_on_virtual_time() -> None:
    world = World()
    world.clusters.put(owned_cluster())
    world.client.put(RAY_CLUSTERS, owned_cluster())
    wire = rayjob_wire(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10)
    fields = started(
        world,
        job_deployment_status=JobDeploymentStatus.COMPLETE,
        job_status=JobStatus.SUCCEEDED,
        end_time=format_time(world.clock.wall()),
    )
    world.clock.step(4)
    stop = await phases.on_finished(world.context(wire, **fields))
    assert stop is not None and stop.status is StatusEdits.DISCARD
    assert stop.result.requeue_after == pytest.approx(6 + 2)
    assert world.client.calls == []
    world.clock.step(6)
    assert await phases.on_finished(world.context(wire, **fields)) is phases.IDLE
    assert [(c.verb, c.resource, c.propagation_policy) for c in world.client.calls] == [
        ("delete", "rayclusters", "Background")
    ]
    assert world.recorder.reasons() == ["DeletedRayCluster"]


async def test_finished_without_a_policy_and_validation_failed_do_nothing() -> None:
    world = World()
    fields = {"job_deployment_status": JobDeploymentStatus.FAILED}
    assert await phases.on_finished(world.context(rayjob_wire(), **fields)) is phases.IDLE
    fields = {"job_deployment_status": JobDeploymentStatus.VALIDATION_FAILED}
    assert await phases.on_validation_failed(world.context(rayjob_wire(), **fields)) is phases.IDLE
    assert world.client.calls == []


def test_every_deployment_status_has_a_handler() -> None:
    assert set(phases.PHASES) == {s.value for s in JobDeploymentStatus}
