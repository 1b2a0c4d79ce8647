"""RayJob retries: each attempt of a failing job runs on a new RayCluster, up to backoffLimit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from .rayjob_env import FAILING_ENTRYPOINT, RayJobEnv, running_rayjob_operator, small_rayjob

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[RayJobEnv]:
    async with running_rayjob_operator() as running:
        yield running


def cluster_writes(env: RayJobEnv, namespace: str) -> list[tuple[str, str]]:
    """Successful creates and deletes of RayClusters in ``namespace``, in order."""
    return [
        (w.verb, w.name)
        for w in env.cp.audit.writes
        if w.resource == "rayclusters" and w.namespace == namespace
        and w.verb in ("create", "delete") and w.code in (200, 201, 202)
    ]  # fmt: skip


@pytest.mark.parametrize("mode", ["K8sJobMode", "HTTPMode"])
async def test_failing_job_retries_on_three_clusters_then_fails(env: RayJobEnv, mode: str) -> None:
    namespace = await env.namespace(f"backoff-{mode.lower()}")
    rayjob = small_rayjob(
        "failing", entrypoint=FAILING_ENTRYPOINT, backoffLimit=2, submissionMode=mode
    )
    await env.apply(rayjob, namespace)
    status = await env.wait_for_status(namespace, "failing", "Failed", timeout=28)
    # the final Failed is written once the third attempt fails; no further retry
    assert status["failed"] == 3 and status["succeeded"] == 0
    assert status["reason"] == "AppFailed" and status["jobStatus"] == "FAILED"
    creates = env.cluster_creates(namespace)
    assert len(creates) == 3 and len(set(creates)) == 3
    assert status["rayClusterName"] == creates[-1]
    writes = cluster_writes(env, namespace)
    # in turn: each retry's cluster is created only after the previous one was deleted
    assert writes[:5] == [
        ("create", creates[0]),
        ("delete", creates[0]),
        ("create", creates[1]),
        ("delete", creates[1]),
        ("create", creates[2]),
    ]
    submitted = env.submissions(namespace)
    assert len(submitted) == 3 and len(set(submitted)) == 3
    assert status["jobId"] == submitted[-1]


async def test_no_backoff_limit_fails_at_once(env: RayJobEnv) -> None:
    namespace = await env.namespace("no-retry")
    await env.apply(small_rayjob("failing", entrypoint=FAILING_ENTRYPOINT), namespace)
    status = await env.wait_for_status(namespace, "failing", "Failed", "Retrying")
    assert status["jobDeploymentStatus"] == "Failed" and status["failed"] == 1
    assert len(env.cluster_creates(namespace)) == 1
    # the failed attempt's cluster and submitter Job are kept (no deletion policy)
    assert env.raycluster(namespace, status["rayClusterName"]) is not None
    assert env.batch_job(namespace, "failing") is not None
