"""The background job poller (``--rayjob-dashboard-poll-interval 3``) on the embedded plane: a Running RayJob costs one dashboard GET per
3 s and no reconcile, status write or API request; its polling ends when the job finishes and
when the RayJob is deleted (no GET afterwards)."""

from __future__ import annotations

import asyncio
import functools

import pytest

import rayop.testing.operator
from rayop.bench.metrics import Snapshot
from rayop.controllers.dashboard.transport import REQUESTS_SENT
from rayop.controllers.rayjob.setup import setup_rayjob_controller
from rayop.kube.resources import RAY_JOBS
from rayop.runtime.manager import Manager
from rayop.testing import PlaneUnderTest, eventually, open_control_plane, open_operator

from .rayjob_env import FAST_DASHBOARD, small_rayjob

pytestmark = pytest.mark.timeout(90)


def _status(plane: PlaneUnderTest, ns: str, name: str) -> dict[str, object]:
    job = plane.stored(RAY_JOBS, ns, name) or {}
    return dict(job.get("status") or {})


def _running(plane: PlaneUnderTest, ns: str, name: str) -> bool:
    status = _status(plane, ns, name)
    return status.get("jobDeploymentStatus") == "Running" and status.get("jobStatus") == "RUNNING"


def _passes(manager: Manager) -> float:
    snapshot = Snapshot.from_registry(manager.metrics.registry)
    return snapshot.total("controller_runtime_reconcile_total", controller="rayjob")


async def test_a_running_job_is_polled_without_passes_and_stops_being_polled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    polled = functools.partial(setup_rayjob_controller, poll_interval=3.0)
    monkeypatch.setattr(rayop.testing.operator, "setup_rayjob_controller", polled)
    async with (
        open_control_plane(dashboard=FAST_DASHBOARD) as plane,
        open_operator(plane, controllers=("RayCluster", "RayJob")) as operator,
    ):
        ns = await plane.namespace("polling")
        long = small_rayjob("long", entrypoint="sleep 600", submissionMode="HTTPMode")
        await plane.create(RAY_JOBS, long, ns)
        await eventually(lambda: _running(plane, ns, "long"), timeout=40, what="long RUNNING")
        await asyncio.sleep(1.0)  # the cluster's last status copy lands
        version = (plane.stored(RAY_JOBS, ns, "long") or {})["metadata"]["resourceVersion"]
        requests, gets = plane.cp.audit.count(namespace=ns), REQUESTS_SENT["direct"]
        passes = _passes(operator.manager)
        await asyncio.sleep(7.0)
        assert 2 <= REQUESTS_SENT["direct"] - gets <= 4  # one GET per 3 s
        assert _passes(operator.manager) == passes  # and no reconcile
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
        await asyncio.sleep(0.5)
        gets = REQUESTS_SENT["direct"]
        await asyncio.sleep(7.0)
        assert REQUESTS_SENT["direct"] == gets  # neither job is polled any more
