"""Delayed and rate-limited adds of the classic queue: D1-D4 and RL1-RL3 (reference §1.2-1.3)."""

from __future__ import annotations

import asyncio

import pytest

from rayop.runtime.queues.rate_limiters import ItemExponentialFailureRateLimiter
from rayop.runtime.queues.ratelimiting import RateLimitingQueue
from rayop.testing import settle
from rayop.testing.clock import FakeClock

from .recording_metrics import RecordingMetrics


def make_queue(
    clock: FakeClock, *, metrics: RecordingMetrics | None = None
) -> RateLimitingQueue[str]:
    return RateLimitingQueue(
        name="q",
        clock=clock,
        metrics=metrics,
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0),
    )


async def test_add_after_waits_for_the_clock() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 5.0)
    await settle()
    assert len(q) == 0
    clock.step(4.9)
    await settle()
    assert len(q) == 0
    clock.step(0.1)
    assert await asyncio.wait_for(q.get(), 1) == ("a", False)


@pytest.mark.parametrize("delay", [0.0, -3.0])
async def test_add_after_non_positive_adds_at_once_and_counts_a_retry(delay: float) -> None:
    metrics = RecordingMetrics()
    q = make_queue(FakeClock(), metrics=metrics)
    q.add_after("a", delay)
    assert len(q) == 1
    assert metrics.events == [("retry",), ("add", "a", None)]


async def test_every_add_after_counts_a_retry_and_the_add_happens_when_due() -> None:
    clock = FakeClock()
    metrics = RecordingMetrics()
    q = make_queue(clock, metrics=metrics)
    q.add_after("a", 2.0)
    q.add_after("a", 1.0)
    q.add_after("a", 3.0)
    assert metrics.events == [("retry",)] * 3
    clock.step(1.0)
    await settle()
    assert metrics.events[3:] == [("add", "a", None)]


async def test_earlier_time_wins_and_nothing_is_postponed() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 10.0)
    q.add_after("a", 5.0)
    q.add_after("a", 20.0)
    clock.step(5.0)
    await settle()
    assert len(q) == 1
    assert await q.get() == ("a", False)
    q.done("a")
    clock.step(100.0)
    await settle()
    assert len(q) == 0  # only one entry was ever pending


async def test_due_items_are_added_in_ready_at_order() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("c", 3.0)
    q.add_after("b", 2.0)
    q.add_after("a", 1.0)
    clock.step(10.0)
    got = [(await q.get())[0] for _ in range(3)]
    assert got == ["a", "b", "c"]


async def test_pending_entry_is_independent_of_the_main_queue() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 600.0)
    q.add("a")
    assert await q.get() == ("a", False)
    q.forget("a")
    q.done("a")
    await settle()
    assert len(q) == 0
    clock.step(600.0)
    assert await asyncio.wait_for(q.get(), 1) == ("a", False)


async def test_pending_entry_of_a_processing_item_is_deferred_to_done() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add("a")
    await q.get()
    q.add_after("a", 1.0)
    clock.step(1.0)
    await settle()
    assert len(q) == 0
    q.done("a")
    assert await q.get() == ("a", False)


async def test_shutdown_drops_pending_entries() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 5.0)
    q.add("b")
    q.shut_down()
    clock.step(10.0)
    await settle()
    assert await q.get() == ("b", False)
    assert (await q.get())[1]


async def test_add_after_is_a_noop_while_shutting_down() -> None:
    metrics = RecordingMetrics()
    q = make_queue(FakeClock(), metrics=metrics)
    q.shut_down()
    q.add_after("a", 0.0)
    q.add_after("a", 1.0)
    assert metrics.events == []
    assert len(q) == 0


async def test_add_rate_limited_uses_the_limiter() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_rate_limited("a")
    q.add_rate_limited("a")  # 2 s, but the pending 1 s entry is earlier
    assert q.num_requeues("a") == 2
    clock.step(1.0)
    assert await asyncio.wait_for(q.get(), 1) == ("a", False)
    q.done("a")
    q.add_rate_limited("a")  # third failure: 4 s
    clock.step(3.9)
    await settle()
    assert len(q) == 0
    clock.step(0.1)
    await settle()
    assert len(q) == 1


async def test_when_counts_even_while_shutting_down() -> None:
    q = make_queue(FakeClock())
    q.shut_down()
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 2
    assert len(q) == 0


async def test_forget_clears_history_not_membership() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add("a")
    q.add_rate_limited("b")
    q.forget("a")
    q.forget("b")
    assert len(q) == 1
    assert q.num_requeues("b") == 0
    clock.step(1.0)
    await settle()
    assert len(q) == 2


async def test_default_limiter_includes_the_global_bucket() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[int] = RateLimitingQueue(clock=clock)
    for i in range(101):
        q.add_rate_limited(i)
    clock.step(0.005)
    await settle()
    assert len(q) == 100  # the 101st waits ~100 ms for a bucket token
    clock.step(0.1)
    await settle()
    assert len(q) == 101


async def test_delays_work_on_the_real_clock() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue()
    q.add_after("a", 0.01)
    assert await asyncio.wait_for(q.get(), 5) == ("a", False)
