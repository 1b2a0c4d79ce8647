"""Transition checks the phases run first: suspend, deadlines and grace periods.

KubeRay v1.7.0: ``checkActiveDeadlineAndUpdateStatusIfNeeded``,
``checkPreRunningDeadlineAndUpdateStatusIfNeeded``,
``checkTransitionGracePeriodAndUpdateStatusIfNeeded`` and the other ``check*`` functions in
``ray-operator/controllers/ray/rayjob_controller.go``.

Each check looks at the spec, the status and the wall-clock time; when it fires it edits the
status (the new deployment status, reason and message) and returns True, and the phase ends its
pass there. Nothing here does I/O.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rayop.api.common import parse_time
from rayop.api.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJob, RayJobStatus
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.models import is_terminal
from rayop.controllers.kit import settings
from rayop.controllers.rayjob.status import mark_failed

SUBMITTER_FINISHED_TIMEOUT = timedelta(seconds=30)
"""``DefaultSubmitterFinishedTimeout``: a RayJob whose submitter finished this long ago fails."""
_SUSPENDABLE = frozenset({JobDeploymentStatus.INITIALIZING, JobDeploymentStatus.RUNNING})


def _start(status: RayJobStatus, now: datetime) -> datetime:
    return parse_time(status.start_time) if status.start_time else now


def suspend_if_requested(job: RayJob, status: RayJobStatus) -> bool:
    """Moves Initializing/Running to Suspending when ``spec.suspend`` is set."""
    if not job.spec.suspend or status.job_deployment_status not in _SUSPENDABLE:
        return False
    status.job_deployment_status = JobDeploymentStatus.SUSPENDING
    return True


ACTIVE_DEADLINE = ("activeDeadlineSeconds", JobFailedReason.DEADLINE_EXCEEDED)
PRE_RUNNING_DEADLINE = ("preRunningDeadlineSeconds", JobFailedReason.PRE_RUNNING_DEADLINE_EXCEEDED)
"""A deadline counted from ``startTime``: its spec field's wire name, the reason when it passes."""


def _deadline_exceeded(
    status: RayJobStatus, now: datetime, limit: int | None, deadline: tuple[str, JobFailedReason]
) -> bool:
    """Fails with the deadline's reason once ``startTime + limit`` seconds have passed (no
    limit: never)."""
    if limit is None or now < _start(status, now) + timedelta(seconds=limit):
        return False
    wire_name, reason = deadline
    message = (
        f"The RayJob has passed the {wire_name}. StartTime: {status.start_time}. "
        f"{wire_name[:1].upper()}{wire_name[1:]}: {limit}"
    )
    mark_failed(status, reason, message)
    return True


def active_deadline_exceeded(job: RayJob, status: RayJobStatus, now: datetime) -> bool:
    """Fails with DeadlineExceeded once ``startTime + activeDeadlineSeconds`` has passed."""
    return _deadline_exceeded(status, now, job.spec.active_deadline_seconds, ACTIVE_DEADLINE)


def pre_running_deadline_exceeded(job: RayJob, status: RayJobStatus, now: datetime) -> bool:
    """Fails with PreRunningDeadlineExceeded once ``startTime + preRunningDeadlineSeconds`` has
    passed before the job reached Running."""
    limit = job.spec.pre_running_deadline_seconds
    return _deadline_exceeded(status, now, limit, PRE_RUNNING_DEADLINE)


def transition_grace_exceeded(
    status: RayJobStatus, now: datetime, *, options: OperatorOptions
) -> bool:
    """Forces Complete/Failed when the Ray job has been terminal for longer than the grace period
    (``RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS``) while the deployment still Runs."""
    end = status.ray_job_info.end_time if status.ray_job_info is not None else None
    if not is_terminal(status.job_status or "") or end is None:
        return False
    grace = options.rayjob_deployment_status_transition_grace_period_seconds
    if now < parse_time(end) + timedelta(seconds=grace):
        return False
    failed = status.job_status == JobStatus.FAILED
    status.job_deployment_status = (
        JobDeploymentStatus.FAILED if failed else JobDeploymentStatus.COMPLETE
    )
    status.reason = JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED
    status.message = (
        f"The RayJob submitter has been in a terminal state for more than {grace} seconds, "
        "but the deployment status did not follow"
    )
    return True


def status_check_timed_out(
    status: RayJobStatus, now: datetime, *, options: OperatorOptions
) -> bool:
    """Fails with JobStatusCheckTimeoutExceeded when dashboard checks have failed continuously
    for ``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS``."""
    since = status.job_status_check_failure_start_time
    timeout = options.rayjob_status_check_timeout_seconds
    if since is None or now < parse_time(since) + timedelta(seconds=timeout):
        return False
    mark_failed(
        status,
        JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED,
        f"Job status checks have been failing since {since}; exceeded timeout of {timeout}s",
    )
    return True


def submitter_finished_timed_out(
    status: RayJobStatus, finished_at: datetime | None, now: datetime
) -> bool:
    """Fails the job (``JobStatus`` FAILED too) 30 s after its submitter finished, whatever
    the job status last read, as KubeRay's ``checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded``
    does: a pass that reads the job's terminal status in time ends the RayJob before, so this
    fires only when that read fails (the dashboard unreachable) or the job never ends."""
    if finished_at is None or now < finished_at + SUBMITTER_FINISHED_TIMEOUT:
        return False
    status.job_status = JobStatus.FAILED
    mark_failed(
        status,
        JobFailedReason.TRANSITION_GRACE_PERIOD_EXCEEDED,
        f"The RayJob submitter finished at {finished_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} but "
        f"the ray job did not reach terminal state within "
        f"{int(SUBMITTER_FINISHED_TIMEOUT.total_seconds())}s",
    )
    return True


def next_check_in(
    job: RayJob,
    status: RayJobStatus,
    now: datetime,
    *,
    submitter_finished_at: datetime | None,
    options: OperatorOptions,
) -> float | None:
    """Returns the seconds until the next Running-phase check above could fire on time alone
    (active deadline, status-check timeout, transition grace, finished submitter), or None
    when none can: when a pass that changes nothing must look again."""
    deadlines: list[datetime] = []
    if job.spec.active_deadline_seconds is not None:
        deadlines.append(_start(status, now) + timedelta(seconds=job.spec.active_deadline_seconds))
    since = status.job_status_check_failure_start_time
    if since is not None:
        timeout = options.rayjob_status_check_timeout_seconds
        deadlines.append(parse_time(since) + timedelta(seconds=timeout))
    terminal = is_terminal(status.job_status or "")
    end = status.ray_job_info.end_time if status.ray_job_info is not None else None
    if terminal and end is not None:
        grace = options.rayjob_deployment_status_transition_grace_period_seconds
        deadlines.append(parse_time(end) + timedelta(seconds=grace))
    if submitter_finished_at is not None:
        deadlines.append(submitter_finished_at + SUBMITTER_FINISHED_TIMEOUT)
    if not deadlines:
        return None
    return max(0.0, (min(deadlines) - now).total_seconds()) + settings.RAYJOB_NEXT_CHECK_MARGIN
