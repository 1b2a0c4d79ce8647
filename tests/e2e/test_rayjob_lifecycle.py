"""RayJob lifecycle with long-running Ray jobs (they run until the test finishes them): suspend and
resume, the finalizer that stops a running job, deadlines, validation, a user's stop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.resources import EVENTS, RAY_CLUSTERS, RAY_JOBS
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import eventually

from .rayjob_env import RayJobEnv, running_rayjob_operator, small_rayjob

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENDLESS_JOBS = DashboardConfig(
    job_pending_seconds=0.1, job_run_seconds=None, job_stop_seconds=0.1, submitter_poll_seconds=0.1
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[RayJobEnv]:
    async with running_rayjob_operator(dashboard=ENDLESS_JOBS) as running:
        yield running


async def running_job(env: RayJobEnv, ns: str, name: str) -> tuple[Any, str]:
    """Waits until the RayJob's Ray job RUNs; returns its dashboard and job id."""
    await eventually(
        lambda: env.status(ns, name).get("jobStatus") == "RUNNING",
        what=f"{name} RUNNING",
    )
    status = env.status(ns, name)
    dash = env.cp.dashboards.for_cluster(ns, status["rayClusterName"])
    assert dash is not None
    return dash, status["jobId"]


def set_suspend(value: bool) -> Any:
    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"]["suspend"] = value

    return mutate


async def test_suspend_deletes_everything_and_resume_starts_over(env: RayJobEnv) -> None:
    ns = await env.namespace("suspend")
    await env.apply(small_rayjob("job", shutdownAfterJobFinishes=True), ns)
    _, first_id = await running_job(env, ns, "job")
    first_cluster = env.status(ns, "job")["rayClusterName"]
    await env.edit(ns, "job", set_suspend(True))
    status = await env.wait_for_status(ns, "job", "Suspended")
    assert "rayClusterName" not in status and "jobId" not in status
    assert status["jobStatus"] == ""
    assert env.raycluster(ns, first_cluster) is None and env.batch_job(ns, "job") is None

    await env.edit(ns, "job", set_suspend(False))
    dash, second_id = await running_job(env, ns, "job")
    second_cluster = env.status(ns, "job")["rayClusterName"]
    assert second_cluster != first_cluster and second_id != first_id
    dash.finish_job(second_id)
    status = await env.wait_for_status(ns, "job", "Complete")
    assert status["jobStatus"] == "SUCCEEDED" and status["failed"] == 0
    assert env.cluster_creates(ns) == [first_cluster, second_cluster]
    assert env.submissions(ns) == [first_id, second_id]


async def test_created_suspended_creates_no_cluster(env: RayJobEnv) -> None:
    ns = await env.namespace("born-suspended")
    await env.apply(small_rayjob("job", shutdownAfterJobFinishes=True, suspend=True), ns)
    await env.wait_for_status(ns, "job", "Suspended")
    assert env.cluster_creates(ns) == []
    await env.edit(ns, "job", set_suspend(False))
    await running_job(env, ns, "job")
    assert len(env.cluster_creates(ns)) == 1


async def test_deleting_a_running_rayjob_stops_its_job(env: RayJobEnv) -> None:
    ns = await env.namespace("finalizer")
    await env.apply(small_rayjob("job"), ns)
    dash, job_id = await running_job(env, ns, "job")
    assert env.rayjob(ns, "job")["metadata"]["finalizers"] == ["ray.io/rayjob-finalizer"]  # type: ignore[index]
    await env.client.delete(RAY_JOBS, "job", namespace=ns)
    await eventually(lambda: env.rayjob(ns, "job") is None, what="RayJob gone")
    job = dash.jobs.find(job_id)
    assert job is not None and job.stop_at is not None
    # owner references take the cluster and the submitter Job away
    await eventually(lambda: not env.objects(RAY_CLUSTERS, ns))


async def test_active_deadline_fails_without_retry(env: RayJobEnv) -> None:
    ns = await env.namespace("active-deadline")
    await env.apply(small_rayjob("job", activeDeadlineSeconds=2, backoffLimit=1), ns)
    status = await env.wait_for_status(ns, "job", "Failed", "Retrying", timeout=10)
    assert status["reason"] == "DeadlineExceeded" and status["failed"] == 1
    assert len(env.cluster_creates(ns)) == 1


async def test_pre_running_deadline_in_interactive_mode(env: RayJobEnv) -> None:
    ns = await env.namespace("pre-running")
    await env.apply(
        small_rayjob("job", submissionMode="InteractiveMode", preRunningDeadlineSeconds=8), ns
    )
    # The deadline counts from the start, cluster creation included: 8 s leaves a loaded
    # machine time to make the cluster ready and show Waiting before the deadline passes.
    await env.wait_for_status(ns, "job", "Waiting")
    status = await env.wait_for_status(ns, "job", "Failed", timeout=20)
    assert status["reason"] == "PreRunningDeadlineExceeded"
    assert env.submissions(ns) == []


async def test_stopped_job_completes(env: RayJobEnv) -> None:
    ns = await env.namespace("stopped")
    await env.apply(small_rayjob("job", submissionMode="HTTPMode"), ns)
    dash, job_id = await running_job(env, ns, "job")
    assert dash.jobs.stop(dash.jobs.find(job_id))
    status = await env.wait_for_status(ns, "job", "Complete", "Failed", timeout=10)
    assert status["jobDeploymentStatus"] == "Complete" and status["jobStatus"] == "STOPPED"
    assert env.submissions(ns) == [job_id]


async def test_invalid_rayjob_is_refused_with_an_event(env: RayJobEnv) -> None:
    ns = await env.namespace("invalid")
    await env.apply(small_rayjob("job", suspend=True), ns)
    status = await env.wait_for_status(ns, "job", "ValidationFailed")
    assert status["reason"] == "ValidationFailed"
    assert "shutdownAfterJobFinishes" in status["message"]
    await eventually(
        lambda: any(e.get("reason") == "InvalidRayJobSpec" for e in env.objects(EVENTS, ns)),
        what="InvalidRayJobSpec event",
    )
    assert env.cluster_creates(ns) == []
