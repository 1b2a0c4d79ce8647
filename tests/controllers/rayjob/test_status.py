"""Pure status helpers: initialisation, dashboard mapping, retries, reset, write rule."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from rayop.api.raycluster import RayClusterStatus
from rayop.api.rayjob import RayJobStatus, RayJobStatusInfo
from rayop.controllers.dashboard.models import JobInfo
from rayop.controllers.rayjob.status import (
    apply_backoff,
    apply_job_info,
    init_status,
    needs_write,
    prepare_write,
    reset_attempt,
)

from .rayjob_objects import rayjob

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def test_init_generates_ids_once_before_any_side_effect() -> None:
    status = RayJobStatus()
    init_status(status, rayjob("job"), rng=random.Random(1), now=NOW)
    assert status.job_deployment_status == "Initializing"
    assert status.job_id and status.job_id.startswith("job-") and len(status.job_id) == 9
    assert status.ray_cluster_name and status.ray_cluster_name.startswith("job-")
    assert status.start_time == "2024-05-01T12:00:00Z"
    first = (status.job_id, status.ray_cluster_name)
    init_status(status, rayjob("job"), rng=random.Random(2), now=NOW)
    assert (status.job_id, status.ray_cluster_name) == first


def test_init_uses_spec_job_id_and_cluster_selector() -> None:
    status = RayJobStatus()
    job = rayjob("job", jobId="mine", clusterSelector={"ray.io/cluster": "shared"})
    init_status(status, job, rng=random.Random(1), now=NOW)
    assert (status.job_id, status.ray_cluster_name) == ("mine", "shared")
    interactive = RayJobStatus()
    init_status(interactive, rayjob(submissionMode="InteractiveMode"), rng=random.Random(), now=NOW)
    assert interactive.job_id is None


def test_job_info_mapping() -> None:
    status = RayJobStatus(job_deployment_status="Running", job_status_check_failure_start_time="x")
    info = JobInfo(
        status="SUCCEEDED", message="ok", start_time=1_700_000_000_000, end_time=1_700_000_001_000
    )
    apply_job_info(status, info, submitter_finished=False, cluster_status=None)
    assert status.job_deployment_status == "Running"  # the submitter is still running
    assert status.job_status_check_failure_start_time is None
    apply_job_info(status, info, submitter_finished=True, cluster_status=None)
    assert status.job_deployment_status == "Complete" and status.reason is None
    assert status.ray_job_info == RayJobStatusInfo(
        start_time="2023-11-14T22:13:20Z", end_time="2023-11-14T22:13:21Z"
    )
    apply_job_info(status, JobInfo(status="FAILED"), submitter_finished=True, cluster_status=None)
    assert status.job_deployment_status == "Failed"
    assert status.reason == "AppFailed"
    apply_job_info(status, JobInfo(status="STOPPED"), submitter_finished=True, cluster_status=None)
    assert status.job_deployment_status == "Complete"


def test_backoff_retries_up_to_the_limit_but_not_after_deadlines() -> None:
    job = rayjob(backoffLimit=2)
    status = RayJobStatus(job_deployment_status="Failed", reason="AppFailed")
    apply_backoff(status, job)
    assert (status.job_deployment_status, status.failed) == ("Retrying", 1)
    status = RayJobStatus(job_deployment_status="Failed", reason="AppFailed", failed=2)
    apply_backoff(status, job)
    assert (status.job_deployment_status, status.failed) == ("Failed", 3)
    status = RayJobStatus(job_deployment_status="Failed", reason="DeadlineExceeded")
    apply_backoff(status, job)
    assert status.job_deployment_status == "Failed"
    status = RayJobStatus(job_deployment_status="Complete", job_status="SUCCEEDED")
    apply_backoff(status, job)
    assert status.succeeded == 1


def test_reset_attempt() -> None:
    status = RayJobStatus(job_deployment_status="Retrying", job_id="a", ray_cluster_name="c", dashboard_url="d", job_status="FAILED", reason="AppFailed")  # fmt: skip
    reset_attempt(status)
    assert status.job_deployment_status == "" and status.job_status == ""
    assert status.job_id is None and status.ray_cluster_name is None and status.reason is None
    status = RayJobStatus(job_deployment_status="Suspending")
    reset_attempt(status)
    assert status.job_deployment_status == "Suspended"


def test_write_only_when_it_matters() -> None:
    old = RayJobStatus(job_deployment_status="Running", job_status="RUNNING")
    new = old.model_copy(deep=True)
    new.message = "only the message changed"
    assert not needs_write(old, new)
    new.ray_cluster_status = RayClusterStatus(state="ready")
    assert needs_write(old, new)
    done = RayJobStatus(job_deployment_status="Complete")
    prepare_write(done, now=NOW, generation=3)
    assert done.end_time == "2024-05-01T12:00:00Z" and done.observed_generation == 3
