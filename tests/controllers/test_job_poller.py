"""The background job poller on virtual time: one GET per interval, a change callback for the
first answer, an answer a pass asked for and a changed one only, no caller that waits for an
answer, and no task or client left behind (stop, replace, not wanted, close)."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

import pytest

from rayop.controllers.dashboard.errors import DashboardError, DashboardUnavailable, JobNotFound
from rayop.controllers.dashboard.job_poller import JobInfoPoller, PollTarget, changed
from rayop.controllers.dashboard.models import JobInfo
from rayop.testing import FakeClock

TARGET = PollTarget(
    job_id="j1", dashboard_url="head-svc.ns.svc.cluster.local:8265", cluster_uid="u1"
)


class Client:
    """Answers from ``answers`` (the last one repeats); counts GETs; knows when it is closed."""

    def __init__(self, *answers: JobInfo | DashboardError) -> None:
        self.answers = list(answers)
        self.gets = 0
        self.closed = False

    async def get_job_info(self, job_id: str) -> JobInfo:
        assert not self.closed
        self.gets += 1
        answer = self.answers[0] if len(self.answers) == 1 else self.answers.pop(0)
        if isinstance(answer, DashboardError):
            raise answer
        return answer

    async def close(self) -> None:
        self.closed = True


def running(message: str = "Job is currently running.") -> JobInfo:
    return JobInfo(status="RUNNING", message=message, start_time=1000)


class Harness:
    def __init__(self, interval: float = 3.0) -> None:
        self.clock = FakeClock()
        self.wanted = True
        self.changes: list[Hashable] = []
        self.poller = JobInfoPoller(
            interval=interval, clock=self.clock, still_wanted=lambda key, target: self.wanted
        )
        self.poller.on_change = self.changes.append

    async def tick(self, seconds: float = 3.0) -> None:
        self.clock.step(seconds)
        await settle()

    async def start(self, key: Hashable, client: Client, target: PollTarget = TARGET) -> None:
        """Starts polling ``key`` (no answer at once), then lets its first GET answer."""
        assert await self.poller.answer(key, target, lambda: opened(client)) is None
        await settle()


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def is_error(outcome: object) -> bool:
    return not isinstance(outcome, JobInfo)


async def opened(client: Client) -> Client:
    return client


async def test_one_get_per_interval_and_a_callback_only_on_change() -> None:
    h = Harness()
    client = Client(running(), running(), running("other"), running("other"))
    assert await h.poller.answer("k", TARGET, lambda: opened(client)) is None
    assert client.gets == 0  # the caller never waits for the GET
    await settle()
    assert client.gets == 1 and h.changes == ["k"]  # the first answer
    first = await h.poller.answer("k", TARGET, lambda: opened(Client()))
    assert isinstance(first, JobInfo)
    await h.tick()
    assert client.gets == 2 and h.changes == ["k"]  # the same answer: nothing to do
    await h.tick()
    assert client.gets == 3 and h.changes == ["k", "k"]  # the message changed
    latest = await h.poller.answer("k", TARGET, lambda: opened(Client()))
    assert isinstance(latest, JobInfo) and latest.message == "other"
    await h.tick()
    assert client.gets == 4 and h.changes == ["k", "k"]
    assert h.clock.sleeps == [3.0] * 4
    await h.poller.close()
    assert client.closed and len(h.poller) == 0


async def test_errors_count_as_one_answer_until_the_kind_changes() -> None:
    h = Harness()
    client = Client(
        running(), DashboardUnavailable("refused"), DashboardUnavailable("timeout"),
        JobNotFound("j1"), running(),
    )  # fmt: skip
    await h.start("k", client)
    h.changes.clear()
    for _ in range(4):
        await h.tick()
    assert h.changes == ["k", "k", "k"]  # to an error, to a 404, back to an answer
    await h.poller.close()


async def test_an_old_answer_that_needs_a_fresh_one_gets_again_at_once() -> None:
    h = Harness()
    client = Client(DashboardUnavailable("refused"), DashboardUnavailable("refused"), running())
    await h.start("k", client)
    first = await h.poller.answer("k", TARGET, lambda: opened(client), needs_fresh=is_error)
    assert isinstance(first, DashboardUnavailable)  # the first answer is fresh for its reader
    h.changes.clear()
    h.clock.step(1.0)
    assert await h.poller.answer("k", TARGET, lambda: opened(client), needs_fresh=is_error) is None
    await settle()
    assert client.gets == 2 and h.changes == ["k"]  # sent at once; the same error enqueues
    again = await h.poller.answer("k", TARGET, lambda: opened(client), needs_fresh=is_error)
    assert isinstance(again, DashboardUnavailable)  # the asked-for answer, whatever it is
    await h.tick(2.0)  # the interval runs from the fresh GET
    assert client.gets == 2
    await h.tick(1.0)
    assert client.gets == 3
    await h.poller.close()


async def test_a_fresh_request_while_a_get_is_in_flight_waits_for_the_next_get() -> None:
    h = Harness()
    gate = asyncio.Event()

    class Slow(Client):
        async def get_job_info(self, job_id: str) -> JobInfo:
            if self.gets >= 1:
                await gate.wait()
            return await super().get_job_info(job_id)

    client = Slow(JobNotFound("j1"), JobNotFound("j1"), running())
    await h.start("k", client)
    assert isinstance(await h.poller.answer("k", TARGET, lambda: opened(client)), JobNotFound)
    await h.tick()  # the second GET is sent and hangs
    assert await h.poller.answer("k", TARGET, lambda: opened(client), needs_fresh=is_error) is None
    gate.set()
    await settle()  # the in-flight GET was sent before the request: not the fresh one
    fresh = await h.poller.answer("k", TARGET, lambda: opened(client), needs_fresh=is_error)
    assert isinstance(fresh, JobInfo) and client.gets == 3
    await h.poller.close()


async def test_polling_ends_when_not_wanted_and_closes_its_client() -> None:
    h = Harness()
    client = Client(running())
    await h.start("k", client)
    assert h.poller.polling("k") == TARGET
    h.wanted = False
    await h.tick()
    assert len(h.poller) == 0 and client.closed and client.gets == 1
    await h.tick()
    assert client.gets == 1 and not h.clock.has_sleepers()
    await h.poller.close()


async def test_stop_and_a_new_target_end_the_old_polling() -> None:
    h = Harness()
    old, new = Client(running()), Client(running())
    await h.start("k", old)
    other = PollTarget(job_id="j1", dashboard_url=TARGET.dashboard_url, cluster_uid="u2")
    await h.start("k", new, other)
    await h.tick()
    assert old.closed and old.gets == 1 and new.gets == 2 and h.poller.polling("k") == other
    h.poller.stop("k")
    await settle()
    assert new.closed and len(h.poller) == 0 and not h.clock.has_sleepers()
    await h.poller.close()


async def test_refresh_gets_again_at_once_on_the_same_client() -> None:
    h = Harness()
    client = Client(JobNotFound("j1"), running())
    await h.start("k", client)
    assert isinstance(await h.poller.answer("k", TARGET, lambda: opened(client)), JobNotFound)
    h.poller.refresh("k")
    h.changes.clear()
    assert await h.poller.answer("k", TARGET, lambda: opened(Client())) is None
    await settle()
    assert h.changes == ["k"]
    answer = await h.poller.answer("k", TARGET, lambda: opened(Client()))
    assert isinstance(answer, JobInfo) and client.gets == 2 and not client.closed
    await h.poller.close()
    assert client.closed


async def test_close_ends_every_key() -> None:
    h = Harness()
    clients = [Client(running()) for _ in range(5)]
    for i, client in enumerate(clients):
        await h.start(i, client)
    assert len(h.poller) == 5
    await h.poller.close()
    assert len(h.poller) == 0 and all(c.closed for c in clients)


def test_changed_compares_what_a_status_shows() -> None:
    assert changed(None, running())
    assert not changed(running(), running())
    assert changed(running(), JobInfo(status="SUCCEEDED", start_time=1000, end_time=2000))
    assert changed(running(), DashboardUnavailable("x"))
    assert not changed(DashboardUnavailable("x"), DashboardError("y"))
    assert changed(DashboardUnavailable("x"), JobNotFound("j1"))


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="> 0"):
        JobInfoPoller(interval=0, clock=FakeClock(), still_wanted=lambda key, target: True)
