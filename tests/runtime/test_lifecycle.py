"""Structured concurrency and one clock: what the manager, elector and recorder start ends with them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import rayop.runtime
from rayop.kube.client import KubeClient
from rayop.kube.clock import micro_time
from rayop.kube.config import KubeConfig
from rayop.kube.resources import CONFIGMAPS, EVENTS
from rayop.runtime.controller import Controller
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.informers.sources import for_
from rayop.runtime.leaderelection import LeaderElectionSettings, LeaderElector
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.supervisor import TaskSupervisor
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.testing import FakeClock, InMemorySource, eventually, settle

from .informer_fakes import FakeLeases, LeaseClientView

RUNTIME = str(Path(rayop.runtime.__file__).parent)


def runtime_tasks() -> set[asyncio.Task[Any]]:
    """The pending tasks running code of rayop.runtime (the test's own task aside)."""
    found = set()
    for task in asyncio.all_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        mine = code is not None and code.co_filename.startswith(RUNTIME)
        if mine and task is not asyncio.current_task() and not task.done():
            found.add(task)
    return found


@pytest.fixture
async def cp() -> AsyncIterator[EmbeddedControlPlane]:
    async with EmbeddedControlPlane() as plane:
        yield plane


async def test_no_task_the_manager_started_is_pending_after_it_stops(
    cp: EmbeddedControlPlane,
) -> None:
    before = runtime_tasks()
    async with KubeClient(KubeConfig.for_server(cp.url, token=cp.token), qps=-1) as client:
        metrics = OperatorMetrics()
        manager = Manager(client, metrics=metrics, metrics_bind_address="127.0.0.1:0",
                          health_probe_bind_address="127.0.0.1:0",
                          leader_election_namespace="default")  # fmt: skip
        recorder = manager.event_recorder("lifecycle-test")
        seen: list[str] = []

        async def reconcile(request: Request) -> Result:
            cached = informer.get(request.namespace, request.name)
            if cached is not None:
                recorder.event(cached, "Normal", "Seen", "seen by the test controller")
            seen.append(request.name)
            return Result()

        informer = manager.informers.informer(CONFIGMAPS)
        manager.add_controller(
            Controller("lifecycle", reconcile, sources=[for_(informer)], metrics=metrics)
        )
        running = asyncio.get_running_loop().create_task(manager.run())
        await eventually(manager.is_leader, timeout=20)
        await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "one", "namespace": "default"}})  # fmt: skip
        await eventually(lambda: "one" in seen, timeout=20)
        await recorder.flush()
        assert (await client.list(EVENTS, namespace="default"))["items"]
        assert runtime_tasks() - before, "the manager runs tasks"
        await manager.stop()
        await running
        assert runtime_tasks() - before == set()


class StubbornController(Controller):
    async def stop(self, *, graceful: bool = True) -> None:
        await super().stop(graceful=graceful)
        raise RuntimeError("cannot stop")


async def test_a_component_failing_to_stop_is_logged_and_the_rest_still_stops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    manager = Manager(object(), metrics=OperatorMetrics(), metrics_bind_address="0",  # type: ignore[type-var]
                      health_probe_bind_address="0", leader_election=False, clock=clock)  # fmt: skip

    async def reconcile(request: Request) -> Result:
        return Result()

    stubborn = StubbornController("stubborn", reconcile, sources=[InMemorySource()], clock=clock)
    other = Controller("other", reconcile, sources=[InMemorySource()], clock=clock)
    manager.add_controller(other)
    manager.add_controller(stubborn)
    running = asyncio.get_running_loop().create_task(manager.run())
    await eventually(manager.is_ready)
    await settle()
    with caplog.at_level(logging.ERROR, logger="rayop.runtime.manager"):
        await manager.stop()
        await running  # the failure is logged, not raised
    failures = [r for r in caplog.records if "stopping controller stubborn failed" in r.message]
    assert len(failures) == 1 and failures[0].exc_info is not None
    assert "cannot stop" in str(failures[0].exc_info[1])
    assert other.queue.shutting_down()  # stopped although the controller after it failed
    assert runtime_tasks() == set()


class HangingLeases(LeaseClientView):
    """A Lease client whose calls block forever while ``hang`` is set."""

    hang = False

    async def _blocked(self) -> None:
        if self.hang:
            await asyncio.Event().wait()

    async def get(self, res: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        await self._blocked()
        return await super().get(res, name, namespace=namespace)

    async def update(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        await self._blocked()
        return await super().update(res, obj)


async def test_renew_deadline_and_attempt_timeouts_follow_the_injected_clock() -> None:
    clock = FakeClock()
    client = HangingLeases(FakeLeases(), "a")
    settings = LeaderElectionSettings(namespace="ops", identity="a", lease_duration=15.0,
                                      renew_deadline=10.0, retry_period=2.0)  # fmt: skip
    elector = LeaderElector(client, settings, clock=clock)
    campaign = asyncio.get_running_loop().create_task(elector.run())
    await settle()
    assert elector.is_leader()
    spec = client.api.leases["ops/controller-leader"]["spec"]
    assert spec["acquireTime"] == spec["renewTime"] == micro_time(clock.wall())
    client.hang = True
    clock.step(2.0)  # the first renewal starts and hangs
    await settle()
    clock.step(4.9)  # its attempt times out after renew_deadline / 2 = 5 s on the clock
    await settle()
    assert elector.is_leader() and not campaign.done()
    clock.step(0.1)
    await settle()
    clock.step(2.0)  # the second attempt starts 2 s later and hangs as well
    await settle()
    assert elector.is_leader() and not campaign.done()
    clock.step(5.0)  # 12 s after the renewal began, the 10 s deadline has passed
    await settle()
    assert campaign.done() and campaign.result() is True
    assert not elector.is_leader()
    assert not clock.has_sleepers()


async def test_event_times_are_the_injected_clocks_wall_time() -> None:
    clock = FakeClock()
    written: list[dict[str, Any]] = []

    class Api:
        async def create(self, res: Any, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
            written.append(obj)
            return obj

        async def patch(self, res: Any, name: str, body: Any, **kwargs: Any) -> dict[str, Any]:
            written.append(body)
            return dict(body)

    recorder = EventRecorder(Api(), reporting_controller="test", clock=clock)
    regarding = {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns", "uid": "u"}}
    recorder.event(regarding, "Normal", "R", "note")
    first = micro_time(clock.wall())
    clock.step(30.0)
    recorder.event(regarding, "Normal", "R", "note")
    await recorder.flush()
    assert written[0]["eventTime"] == first
    assert written[1]["series"]["lastObservedTime"] == micro_time(clock.wall()) != first
    await recorder.close()
    assert runtime_tasks() == set()


async def test_supervisor_ends_every_task_and_reports_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    supervisor = TaskSupervisor("test")
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(name)

    async def fail() -> None:
        raise ValueError("broken")

    supervisor.spawn(forever("a"), name="a")
    supervisor.spawn(forever("b"), name="b")
    await settle()
    assert supervisor.running
    await supervisor.stop()
    assert sorted(ended) == ["a", "b"] and not supervisor.running
    supervisor.spawn(forever("c"), name="c")  # a fresh group after a stop
    supervisor.spawn(fail(), name="failing")
    with (
        caplog.at_level(logging.ERROR, logger="rayop.runtime.supervisor"),
        pytest.raises(ExceptionGroup),
    ):
        await supervisor.wait()
    assert "c" in ended  # the failure cancelled its sibling
    assert any("test: a background task failed" in r.message for r in caplog.records)
    assert runtime_tasks() == set()
