"""The background job poller (``--rayjob-dashboard-poll-interval``) on the embedded plane: a
Running RayJob costs one dashboard GET per interval and no reconcile, status write or API
request; its polling ends when the job finishes and when the RayJob is deleted (no GET
afterwards)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rayop.controllers.rayjob.blueprint
from rayop.controllers.dashboard.job_poller import JobInfoPoller
from rayop.controllers.dashboard.transport import REQUESTS_SENT
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS
from rayop.runtime.reconcile import Request
from rayop.testing import PlaneUnderTest, eventually, open_control_plane, open_operator

from .rayjob_env import FAST_DASHBOARD, small_rayjob
from .reconcile_passes import PassLog

pytestmark = pytest.mark.timeout(90)

INTERVAL = 0.5
"""The poll interval (3 s is the natural production value; shorter, the test waits less)."""


def _status(plane: PlaneUnderTest, ns: str, name: str) -> dict[str, Any]:
    job = plane.stored(RAY_JOBS, ns, name) or {}
    return dict(job.get("status") or {})


def _running(plane: PlaneUnderTest, ns: str, name: str) -> bool:
    status = _status(plane, ns, name)
    return status.get("jobDeploymentStatus") == "Running" and status.get("jobStatus") == "RUNNING"


def _cluster_status_copied(plane: PlaneUnderTest, ns: str, name: str) -> bool:
    """The RayJob's status holds its ready cluster's latest status."""
    status = _status(plane, ns, name)
    cluster = plane.stored(RAY_CLUSTERS, ns, status.get("rayClusterName") or "") or {}
    cluster_status = cluster.get("status") or {}
    return cluster_status.get("state") == "ready" and status.get("rayClusterStatus") == cluster_status


async def test_a_running_job_is_polled_without_passes_and_stops_being_polled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pollers: list[JobInfoPoller] = []

    def recorded_poller(**kwargs: Any) -> JobInfoPoller:
        pollers.append(JobInfoPoller(**kwargs))
        return pollers[-1]

    monkeypatch.setattr(rayop.controllers.rayjob.blueprint, "JobInfoPoller", recorded_poller)
    passes = PassLog()
    loop = asyncio.get_running_loop()
    async with (
        open_control_plane(dashboard=FAST_DASHBOARD) as plane,
        open_operator(
            plane,
            controllers=("RayCluster", "RayJob"),
            wrap_reconcile=passes.wrap,
            rayjob_dashboard_poll_interval=INTERVAL,
        ),
    ):
        (poller,) = pollers
        ns = await plane.namespace("polling")
        long_job = Request(ns, "long")
        long = small_rayjob("long", entrypoint="sleep 600", submissionMode="HTTPMode")
        await plane.create(RAY_JOBS, long, ns)
        await eventually(lambda: _running(plane, ns, "long"), timeout=40, what="long RUNNING")
        # The cluster's status settles (its workers become ready after its head), and each
        # change of it is a RayJob pass; the measurement starts once none came for a while.
        await eventually(
            lambda: _cluster_status_copied(plane, ns, "long")
            and passes.quiet_for(long_job, 4 * INTERVAL),
            timeout=20,
            what="the cluster's last status copy landed, no RayJob pass for 4 intervals",
        )
        version = (plane.stored(RAY_JOBS, ns, "long") or {})["metadata"]["resourceVersion"]
        requests, gets = plane.cp.audit.count(namespace=ns), REQUESTS_SENT["direct"]
        passes_before = passes.count(long_job)
        await eventually(lambda: REQUESTS_SENT["direct"] > gets, timeout=10 * INTERVAL)
        first = loop.time()
        await eventually(lambda: REQUESTS_SENT["direct"] >= gets + 3, timeout=10 * INTERVAL)
        assert loop.time() - first >= 2 * INTERVAL - 0.1  # one GET per interval, not more
        assert passes.count(long_job) == passes_before  # and no RayJob pass
        assert (plane.stored(RAY_JOBS, ns, "long") or {})["metadata"]["resourceVersion"] == version
        assert plane.cp.audit.count(namespace=ns) == requests  # no API request about it

        short = small_rayjob("short", entrypoint="sleep 2", submissionMode="HTTPMode")
        await plane.create(RAY_JOBS, short, ns)
        await eventually(
            lambda: _status(plane, ns, "short").get("jobDeploymentStatus") == "Complete",
            timeout=40,
            what="short Complete",
        )
        await plane.client.delete(RAY_JOBS, "long", namespace=ns)
        await eventually(lambda: plane.stored(RAY_JOBS, ns, "long") is None, timeout=20)
        await eventually(lambda: len(poller) == 0, timeout=10 * INTERVAL, what="no job polled")
        gets = REQUESTS_SENT["direct"]
        # The behaviour under test is an absence: no GET during three poll intervals.
        await asyncio.sleep(3 * INTERVAL)
        assert REQUESTS_SENT["direct"] == gets  # neither job is polled any more
