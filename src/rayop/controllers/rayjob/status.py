"""Pure helpers over a RayJob's status: initialisation, the dashboard mapping, retries, reset and
the rule for when the status is written (KubeRay v1.7.0: ``initRayJobStatusIfNeed``,
``checkBackoffLimitAndUpdateStatusIfNeeded`` and ``updateRayJobStatus`` in
``ray-operator/controllers/ray/rayjob_controller.go``; the fields are in
``ray-operator/apis/ray/v1/rayjob_types.go``).

They edit a :class:`~rayop.api.rayjob.RayJobStatus` in place; nothing here does I/O.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from rayop.api.common import format_time
from rayop.api.raycluster import RayClusterStatus
from rayop.api.rayjob import (
    JobDeploymentStatus,
    JobFailedReason,
    JobStatus,
    JobSubmissionMode,
    RayJob,
    RayJobStatus,
    RayJobStatusInfo,
)
from rayop.controllers.dashboard.models import JobInfo, is_terminal
from rayop.controllers.rayjob.cluster import (
    CLUSTER_SELECTOR_KEY,
    generate_cluster_name,
    generate_job_id,
)

TERMINAL_DEPLOYMENT_STATUSES = frozenset({JobDeploymentStatus.COMPLETE, JobDeploymentStatus.FAILED})
NO_RETRY_REASONS = frozenset(
    {JobFailedReason.DEADLINE_EXCEEDED, JobFailedReason.JOB_STATUS_CHECK_TIMEOUT_EXCEEDED}
)


def init_status(status: RayJobStatus, job: RayJob, *, rng: random.Random, now: datetime) -> None:
    """Fixes the job id and the cluster name, then moves to Initializing (``initRayJobStatusIfNeed``).

    The id is ``spec.jobId`` or ``<rayjob>-<rand5>`` (none in InteractiveMode); the cluster is the
    ``clusterSelector`` one or ``<rayjob>-<rand5>``. Both are written before any side effect, so a
    failed write can never lead to a second cluster or submission (KubeRay #756).
    """
    interactive = job.spec.submission_mode == JobSubmissionMode.INTERACTIVE_MODE
    if not interactive and not status.job_id:
        status.job_id = job.spec.job_id or generate_job_id(job.name, rng)
    if not status.ray_cluster_name:
        selected = (job.spec.cluster_selector or {}).get(CLUSTER_SELECTOR_KEY, "")
        status.ray_cluster_name = selected or generate_cluster_name(job.name, rng)
    if not status.job_status:
        status.job_status = JobStatus.NEW
    status.job_deployment_status = JobDeploymentStatus.INITIALIZING
    status.start_time = format_time(now)


def mark_failed(status: RayJobStatus, reason: JobFailedReason, message: str) -> None:
    """Moves to Failed with ``reason`` and ``message``."""
    status.job_deployment_status = JobDeploymentStatus.FAILED
    status.reason = reason
    status.message = message


def failure_reason(status: RayJobStatus) -> JobFailedReason:
    """Returns AppFailed when the Ray job itself FAILED, else SubmissionFailed."""
    if status.job_status == JobStatus.FAILED:
        return JobFailedReason.APP_FAILED
    return JobFailedReason.SUBMISSION_FAILED


def _millis(value: int) -> str:
    return format_time(datetime.fromtimestamp(value / 1000, UTC))


def apply_job_info(
    status: RayJobStatus,
    info: JobInfo,
    *,
    submitter_finished: bool,
    cluster_status: RayClusterStatus | None,
) -> None:
    """Copies a dashboard answer into the status (the ``Running`` case of KubeRay's
    ``RayJobReconciler.Reconcile``, v1.7.0).

    A terminal job whose submitter has finished ends the deployment: Complete, or Failed with
    AppFailed when the job FAILED (STOPPED ends Complete). The check-failure timer is cleared.
    """
    deployment = JobDeploymentStatus.RUNNING
    reason: JobFailedReason | None = None
    if is_terminal(info.status) and submitter_finished:
        deployment = JobDeploymentStatus.COMPLETE
        if info.status == JobStatus.FAILED:
            deployment = JobDeploymentStatus.FAILED
            reason = JobFailedReason.APP_FAILED
    status.job_status_check_failure_start_time = None
    status.ray_cluster_status = cluster_status
    status.job_status = info.status
    status.job_deployment_status = deployment
    status.reason = reason
    status.message = info.message
    job_info = status.ray_job_info or RayJobStatusInfo()
    if info.start_time:
        job_info.start_time = _millis(info.start_time)
    if info.end_time:
        job_info.end_time = _millis(info.end_time)
    status.ray_job_info = job_info


def reset_attempt(status: RayJobStatus) -> None:
    """Forgets the cluster and the Ray job after Suspending/Retrying deleted them; moves on to
    Suspended (from Suspending) or New (from Retrying)."""
    status.ray_cluster_status = None
    status.ray_cluster_name = None
    status.dashboard_url = None
    status.job_id = None
    status.message = None
    status.reason = None
    status.ray_job_info = None
    status.job_status_check_failure_start_time = None
    status.job_status = JobStatus.NEW
    if status.job_deployment_status == JobDeploymentStatus.SUSPENDING:
        status.job_deployment_status = JobDeploymentStatus.SUSPENDED
    elif status.job_deployment_status == JobDeploymentStatus.RETRYING:
        status.job_deployment_status = JobDeploymentStatus.NEW


def apply_backoff(status: RayJobStatus, job: RayJob) -> None:
    """Counts this pass's outcome and turns a retriable failure into Retrying
    (``checkBackoffLimitAndUpdateStatusIfNeeded``): at most ``backoffLimit`` retries, never for
    DeadlineExceeded or JobStatusCheckTimeoutExceeded."""
    if status.job_deployment_status == JobDeploymentStatus.FAILED:
        status.failed = (status.failed or 0) + 1
    if (
        status.job_status == JobStatus.SUCCEEDED
        and status.job_deployment_status == JobDeploymentStatus.COMPLETE
    ):
        status.succeeded = (status.succeeded or 0) + 1
    if status.reason in NO_RETRY_REASONS:
        return
    if (
        status.job_deployment_status == JobDeploymentStatus.FAILED
        and status.failed < job.spec.backoff_limit + 1
    ):
        status.job_deployment_status = JobDeploymentStatus.RETRYING


def inconsistent_cluster_status(old: RayClusterStatus | None, new: RayClusterStatus | None) -> bool:
    """Tells whether two cluster status copies differ in what KubeRay compares
    (``InconsistentRayClusterStatus``): state, reason, replica counts, endpoints, head, conditions."""
    a, b = old or RayClusterStatus(), new or RayClusterStatus()
    fields = (
        "state",
        "reason",
        "ready_worker_replicas",
        "available_worker_replicas",
        "desired_worker_replicas",
        "min_worker_replicas",
        "max_worker_replicas",
        "endpoints",
        "head",
        "conditions",
    )
    return any(getattr(a, f) != getattr(b, f) for f in fields)


def needs_write(old: RayJobStatus, new: RayJobStatus) -> bool:
    """Tells whether the status must be written (``updateRayJobStatus``): only when the job
    status, the deployment status, the cluster status copy or the check-failure timer changed."""
    return (
        (old.job_status or "") != (new.job_status or "")
        or (old.job_deployment_status or "") != (new.job_deployment_status or "")
        or inconsistent_cluster_status(old.ray_cluster_status, new.ray_cluster_status)
        or old.job_status_check_failure_start_time != new.job_status_check_failure_start_time
    )


def prepare_write(status: RayJobStatus, *, now: datetime, generation: int | None) -> None:
    """Stamps ``endTime`` on a terminal deployment status and ``observedGeneration``."""
    if status.job_deployment_status in TERMINAL_DEPLOYMENT_STATUSES:
        status.end_time = format_time(now)
    status.observed_generation = generation
