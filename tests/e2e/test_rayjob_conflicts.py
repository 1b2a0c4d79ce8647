"""409 conflicts on status writes never lead to a second cluster or a second submission
(KubeRay #756): the job id and the cluster name are written before any side effect; and a
converging RayJob never sends a write that its own previous write made stale."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

import pytest

from rayop.sim.apiserver.faults import Faults

from .rayjob_env import RayJobEnv, load_docs, running_rayjob_operator, small_rayjob

MODES = ("K8sJobMode", "HTTPMode")
JOBS_PER_MODE = 3


async def run_jobs(env: RayJobEnv) -> list[tuple[str, str]]:
    """Applies JOBS_PER_MODE RayJobs per mode (one namespace each) and waits until all finish."""
    created = []
    for mode in MODES:
        for i in range(JOBS_PER_MODE):
            ns = await env.namespace(f"{mode.lower()}-{i}")
            await env.apply(small_rayjob("job", submissionMode=mode), ns)
            created.append((ns, "job"))
    await asyncio.gather(*(env.wait_for_status(ns, n, "Complete", "Failed") for ns, n in created))
    return created


def assert_exactly_once(env: RayJobEnv, created: list[tuple[str, str]]) -> None:
    for ns, name in created:
        status = env.status(ns, name)
        assert status["jobDeploymentStatus"] == "Complete", status
        assert env.cluster_creates(ns) == [status["rayClusterName"]]
        assert env.submissions(ns) == [status["jobId"]]


async def test_first_status_write_conflict_never_duplicates() -> None:
    faults = Faults(conflict_first_status_write_per_object=True)
    async with running_rayjob_operator(faults=faults) as env:
        created = await run_jobs(env)
        assert_exactly_once(env, created)
        refused = Counter(
            w.namespace
            for w in env.cp.audit.writes
            if w.resource == "rayjobs" and w.subresource == "status" and w.code == 409
        )
        # the fault fired: each RayJob's first status write was refused
        assert all(refused[ns] >= 1 for ns, _ in created), refused


async def test_random_conflicts_never_duplicate() -> None:
    faults = Faults(conflict_rate=0.3, seed=11)
    async with running_rayjob_operator(faults=faults) as env:
        created = await run_jobs(env)
        assert_exactly_once(env, created)


async def test_a_converging_sample_never_races_the_cache_behind_its_own_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``ray-job.sample.yaml`` runs to Complete without one status write bound to fail with 409:
    a pass that reads a RayJob older than the controller's own last write of it waits for the
    cache instead (without the own-writes tracker this sample logs two such 409s)."""
    caplog.set_level(logging.ERROR)
    async with running_rayjob_operator() as env:
        rayjob = load_docs("ray-job.sample.yaml", "RayJob")[0]
        await env.apply(rayjob, "sample")
        name = rayjob["metadata"]["name"]
        await env.wait_for_status("sample", name, "Complete", "Failed", timeout=40)
        assert env.deployment_status("sample", name) == "Complete"
        writes = [w for w in env.cp.audit.writes if w.resource == "rayjobs" and w.name == name]
    assert any(w.subresource == "status" and w.code == 200 for w in writes)
    assert [(w.verb, w.subresource) for w in writes if w.code == 409] == []
    assert [r.getMessage() for r in caplog.records if "Reconciler error" in r.getMessage()] == []
