"""The transition checks the phases run first, stepped through their deadlines on a FakeClock."""

from __future__ import annotations

from rayop.api.common import format_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, RayJobStatus, RayJobStatusInfo
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayjob import checks
from rayop.testing import FakeClock

from .rayjob_objects import rayjob

OPTIONS = OperatorOptions()


def stamp(clock: FakeClock) -> str:
    """Returns the clock's wall time as a status timestamp."""
    return format_time(clock.wall())


def test_active_deadline_fires_exactly_when_it_is_due() -> None:
    clock = FakeClock()
    job = rayjob(activeDeadlineSeconds=10)
    start = stamp(clock)
    clock.step(9)
    assert not checks.active_deadline_exceeded(job, RayJobStatus(start_time=start), clock.wall())
    clock.step(1)
    status = RayJobStatus(start_time=start, job_deployment_status="Running")
    assert checks.active_deadline_exceeded(job, status, clock.wall())
    assert (status.job_deployment_status, status.reason) == ("Failed", "DeadlineExceeded")
    assert status.message == (
        f"The RayJob has passed the activeDeadlineSeconds. StartTime: {start}. "
        "ActiveDeadlineSeconds: 10"
    )


def test_pre_running_deadline_and_no_deadline() -> None:
    clock = FakeClock()
    start = stamp(clock)
    clock.step(5)
    status = RayJobStatus(start_time=start)
    assert checks.pre_running_deadline_exceeded(
        rayjob(preRunningDeadlineSeconds=5), status, clock.wall()
    )
    assert status.reason == JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED
    assert status.message is not None and "PreRunningDeadlineSeconds: 5" in status.message
    clock.step(10_000)
    assert not checks.active_deadline_exceeded(
        rayjob(), RayJobStatus(start_time=start), clock.wall()
    )


def test_a_deadline_without_start_time_counts_from_now() -> None:
    clock = FakeClock()
    assert not checks.active_deadline_exceeded(
        rayjob(activeDeadlineSeconds=1), RayJobStatus(), clock.wall()
    )
    assert checks.active_deadline_exceeded(
        rayjob(activeDeadlineSeconds=0), RayJobStatus(), clock.wall()
    )


def test_suspend_only_from_initializing_or_running() -> None:
    job = rayjob(suspend=True, shutdownAfterJobFinishes=True)
    for phase in (JobDeploymentStatus.INITIALIZING, JobDeploymentStatus.RUNNING):
        status = RayJobStatus(job_deployment_status=phase)
        assert checks.suspend_if_requested(job, status)
        assert status.job_deployment_status == JobDeploymentStatus.SUSPENDING
    assert not checks.suspend_if_requested(job, RayJobStatus(job_deployment_status="Complete"))
    running = RayJobStatus(job_deployment_status="Running")
    assert not checks.suspend_if_requested(rayjob(), running)


def test_transition_grace_forces_the_terminal_state_after_the_grace_period() -> None:
    clock = FakeClock()
    grace = OPTIONS.rayjob_deployment_status_transition_grace_period_seconds
    info = RayJobStatusInfo(end_time=stamp(clock))

    def terminal(job_status: str) -> RayJobStatus:
        return RayJobStatus(
            job_status=job_status, job_deployment_status="Running", ray_job_info=info
        )

    clock.step(grace - 1)
    assert not checks.transition_grace_exceeded(
        terminal("SUCCEEDED"), clock.wall(), options=OPTIONS
    )
    clock.step(1)
    status = terminal("SUCCEEDED")
    assert checks.transition_grace_exceeded(status, clock.wall(), options=OPTIONS)
    assert status.job_deployment_status == "Complete"
    assert status.reason == JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    failed = terminal("FAILED")
    assert checks.transition_grace_exceeded(failed, clock.wall(), options=OPTIONS)
    assert failed.job_deployment_status == "Failed"
    assert not checks.transition_grace_exceeded(terminal("RUNNING"), clock.wall(), options=OPTIONS)


def test_status_checks_time_out_after_failing_continuously() -> None:
    clock = FakeClock()
    since = stamp(clock)
    timeout = OPTIONS.rayjob_status_check_timeout_seconds
    clock.step(timeout - 1)
    status = RayJobStatus(job_status_check_failure_start_time=since)
    assert not checks.status_check_timed_out(status, clock.wall(), options=OPTIONS)
    clock.step(1)
    assert checks.status_check_timed_out(status, clock.wall(), options=OPTIONS)
    assert status.reason == JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED
    assert not checks.status_check_timed_out(RayJobStatus(), clock.wall(), options=OPTIONS)


def test_a_finished_submitter_with_a_running_job_fails_after_30_s() -> None:
    clock = FakeClock()
    finished = clock.wall()
    clock.step(29)
    status = RayJobStatus(job_status="RUNNING")
    assert not checks.submitter_finished_timed_out(status, finished, clock.wall())
    clock.step(1)
    assert checks.submitter_finished_timed_out(status, finished, clock.wall())
    assert status.job_status == "FAILED"
    assert status.reason == JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    assert status.message == (
        f"The RayJob submitter finished at {finished:%Y-%m-%d %H:%M:%S} but the ray job did not "
        "reach terminal state within 30s"
    )
    assert not checks.submitter_finished_timed_out(status, None, clock.wall())


def test_a_finished_submitter_fails_the_job_after_30_s_whatever_its_last_read_status() -> None:
    """KubeRay's check reads no job status: a FAILED (or SUCCEEDED) job whose dashboard can no
    longer be read fails 30 s after its submitter finished, not after the 300 s transition
    grace (a SidecarMode job with ``SidecarSubmitterRestart`` stayed Running that long)."""
    clock = FakeClock()
    finished = clock.wall()
    clock.step(30)
    for last_read in ("FAILED", "SUCCEEDED"):
        status = RayJobStatus(job_status=last_read, job_deployment_status="Running")
        assert checks.submitter_finished_timed_out(status, finished, clock.wall())
        assert status.job_deployment_status == "Failed" and status.job_status == "FAILED"
