"""benchmarks/chaos.py, the issue 34 chaos campaign: one short seed runs with 0 violations, a seed
replays the same plan, and each invariant check flags the history that breaks it."""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.resources import LEASES, PODS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.sim.dashboard.registry import SubmissionRecord
from rayop.testing import PlaneUnderTest, open_control_plane

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NS = "checked"
OPERATOR = "admin"  # the checks below act as the operator with the admin token

Obj = dict[str, Any]


@pytest.fixture
def chaos(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield {
        name: importlib.import_module(name)
        for name in ("chaos", "chaos_faults", "chaos_record", "chaos_schedule", "chaos_workload")
    }


@pytest_asyncio.fixture
async def checked(chaos: dict[str, ModuleType]) -> AsyncIterator[tuple[PlaneUnderTest, Any]]:
    async with open_control_plane() as plane:
        await plane.namespace(NS)
        record = chaos["chaos_record"].Record(plane.cp, NS, OPERATOR)
        record.start()
        yield plane, record
        record.stop()


def _invariants(record: Any) -> list[str]:
    return [v.invariant for v in record.violations]


def _worker(cluster: str, name: str, owner: Obj | None = None) -> Obj:
    meta: Obj = {
        "name": name,
        "labels": {"ray.io/cluster": cluster, "ray.io/group": "workers",
                   "ray.io/node-type": "worker"},
    }  # fmt: skip
    if owner is not None:
        meta["ownerReferences"] = [{
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True,
        }]  # fmt: skip
    return {"metadata": meta, "spec": {"containers": [{"name": "w", "image": "ray"}]}}


def test_a_seed_fixes_the_whole_plan(chaos: dict[str, ModuleType]) -> None:
    make_plan = chaos["chaos_schedule"].make_plan
    plan = make_plan(5, duration=60, kills=10, storms=3, lease_losses=1)
    assert plan == make_plan(5, duration=60, kills=10, storms=3, lease_losses=1)
    assert plan != make_plan(6, duration=60, kills=10, storms=3, lease_losses=1)
    counts = plan.counts()
    assert sum(n for k, n in counts.items() if k.startswith("kill")) == 10
    assert counts["storm"] == 3 and counts["lease-lost"] == 1
    assert all(0 <= f.at <= 60 for f in plan.faults) and plan.actions


async def test_a_pod_beyond_the_spec_is_over_creation(checked: tuple[PlaneUnderTest, Any]) -> None:
    plane, record = checked
    workload = importlib.import_module("chaos_workload")
    await plane.create(RAY_CLUSTERS, workload.raycluster("rc", 1), NS)
    await plane.create(PODS, _worker("rc", "w1"), NS)
    assert _invariants(record) == []
    await plane.create(PODS, _worker("rc", "w2"), NS)
    assert _invariants(record) == ["no-over-creation"]
    assert "2 live pods" in record.violations[0].detail


async def test_a_terminal_job_going_back_to_running_is_caught(
    checked: tuple[PlaneUnderTest, Any],
) -> None:
    plane, record = checked
    workload = importlib.import_module("chaos_workload")
    job = await plane.create(RAY_JOBS, workload.rayjob("job", "HTTPMode", shutdown=False), NS)
    job["status"] = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED",
                     "observedGeneration": 1}  # fmt: skip
    job = await plane.client.update_status(RAY_JOBS, job)
    assert _invariants(record) == []
    job["status"] = {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}
    await plane.client.update_status(RAY_JOBS, job)
    assert sorted(_invariants(record)) == ["status-never-backwards"] * 3


async def test_a_rayservice_without_a_serving_cluster_is_caught(
    checked: tuple[PlaneUnderTest, Any],
) -> None:
    plane, record = checked
    workload = importlib.import_module("chaos_workload")
    rs = await plane.create(RAY_SERVICES, workload.rayservice("rs"), NS)
    rs["status"] = {"serviceStatus": "Running"}
    await plane.client.update_status(RAY_SERVICES, rs)
    record.stop()
    assert _invariants(record) == ["rayservice-keeps-serving"]
    assert "no serve Service" in record.violations[0].detail


async def test_deleting_an_object_without_an_owner_is_caught(
    checked: tuple[PlaneUnderTest, Any],
) -> None:
    plane, record = checked
    workload = importlib.import_module("chaos_workload")
    rc = await plane.create(RAY_CLUSTERS, workload.raycluster("rc", 2), NS)
    await plane.create(PODS, _worker("rc", "owned", owner=rc), NS)
    await plane.create(PODS, _worker("rc", "users"), NS)
    for name in ("owned", "users"):
        await plane.client.delete(PODS, name, namespace=NS)
    record.after_run()
    assert [(v.invariant, v.subject) for v in record.violations] == [
        ("operator-deletes-only-its-own", "pods/users")
    ]


async def test_a_second_submission_for_one_rayjob_is_caught(
    checked: tuple[PlaneUnderTest, Any],
) -> None:
    plane, record = checked
    workload = importlib.import_module("chaos_workload")
    cluster = workload.raycluster("job-abcde", 1)
    cluster["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayJob",
                                     "ray.io/originated-from-cr-name": "job"}  # fmt: skip
    await plane.create(RAY_CLUSTERS, cluster, NS)
    for sid in ("job-1", "job-2"):
        plane.cp.dashboards.submissions.append(
            SubmissionRecord(NS, "job-abcde", "uid", sid, "python x.py", 0.0)
        )
    record.after_run()
    assert _invariants(record) == ["no-duplicate-submission"]


async def test_a_short_seed_under_kills_and_a_storm_has_no_violation(
    chaos: dict[str, ModuleType], tmp_path: Path
) -> None:
    plan = chaos["chaos_schedule"].make_plan(11, duration=20, kills=3, storms=1, lease_losses=0)
    result = await chaos["chaos"].run_seed(plan, broken=None, converge_seconds=60, workdir=tmp_path)
    detail = [(v.invariant, v.subject, v.detail) for v in result.violations]
    assert detail == [], (tmp_path / "operator-11.log").read_text()[-3000:]
    assert sum(n for k, n in result.faults.items() if k.startswith("kill")) == 3
    assert result.faults["storm"] == 1 and result.converge_seconds is not None
    assert result.operator_starts == 4
    assert result.pod_creates > 0 and result.checks["pod-create"] == result.pod_creates
    assert set(result.objects) >= {"pods", "rayclusters", "rayjobs", "rayservices"}


class _LeaderStandIn:
    """The driver's operator: takes the free leader Lease at once after each start and notes, at
    each SIGKILL, whether the Lease was lost at that moment."""

    def __init__(self, plane: PlaneUnderTest, driver: Any) -> None:
        self.plane, self.driver = plane, driver
        self.starts = 1
        self.killed_while_lost: list[bool] = []

    def sigkill(self) -> bool:
        lost = any(f.kind == "lease-lost" for f in self.driver._active)
        self.killed_while_lost.append(lost or self.driver.leader() == "chaos-usurper")
        return True

    async def reap(self) -> int | None:
        return -9

    async def start(self) -> None:
        self.starts += 1

    async def lead(self) -> None:
        """Takes the Lease whenever it is free (what a started operator does)."""
        while True:
            lease = await self.plane.client.get(LEASES, "ray-operator-leader", namespace="sys")
            if not lease["spec"].get("holderIdentity"):
                lease["spec"]["holderIdentity"] = f"op-{self.starts}"
                await self.plane.client.update(LEASES, lease)
            await asyncio.sleep(0.02)


async def test_a_kill_never_lands_while_the_lease_is_lost(
    chaos: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill already waiting its delay after the leader took over holds off a lost Lease planned
    during that delay (else the kill ends the leader before it has to give up leadership)."""
    faults, schedule = chaos["chaos_faults"], chaos["chaos_schedule"]
    monkeypatch.setattr(faults, "LEASE_EXIT_GRACE", 0.05)
    async with open_control_plane() as plane:
        await plane.namespace("sys")
        await plane.create(LEASES, {"metadata": {"name": "ray-operator-leader"},
                                    "spec": {"holderIdentity": "op-1"}}, "sys")  # fmt: skip
        record = chaos["chaos_record"].Record(plane.cp, NS, OPERATOR)
        driver = faults.FaultDriver(plane.cp, None, record, "sys")
        operator = driver.operator = _LeaderStandIn(plane, driver)
        leading = asyncio.create_task(operator.lead())
        kill = schedule.Fault(0.0, "kill", settings={"after_leading": 0.3})
        lost = schedule.Fault(0.1, "lease-lost", 0.3, (), {"latency": 0.01})
        t0 = time.monotonic()

        async def lose_lease() -> None:
            await asyncio.sleep(max(0.0, t0 + lost.at - time.monotonic()))
            await driver.lease_lost(lost)

        try:
            await asyncio.wait_for(asyncio.gather(driver.kills([kill], t0), lose_lease()), 10)
        finally:
            leading.cancel()
    assert operator.killed_while_lost == [False]
    assert driver.done["kill"] == 1 and driver.done["lease-lost"] == 1
