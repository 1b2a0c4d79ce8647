"""The priority queue: P1-P5 and P7 of controller-machinery.md §1.5, and its metrics hooks."""

from __future__ import annotations

import asyncio

from rayop.runtime.queues.priority import PriorityQueue
from rayop.runtime.queues.rate_limiters import ItemExponentialFailureRateLimiter
from rayop.testing import settle
from rayop.testing.clock import FakeClock

from .recording_metrics import RecordingMetrics


def make_queue(
    clock: FakeClock | None = None, *, metrics: RecordingMetrics | None = None
) -> PriorityQueue[str]:
    return PriorityQueue(
        name="q",
        clock=clock or FakeClock(),
        metrics=metrics,
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0),
    )


async def drain_now(q: PriorityQueue[str]) -> list[str]:
    """Gets and finishes every ready item, in order."""
    out = []
    while len(q):
        item, _ = await q.get()
        q.done(item)
        out.append(item)
    return out


async def test_one_entry_per_key() -> None:
    q = make_queue()
    for _ in range(3):
        q.add("a")
    assert len(q) == 1
    assert await drain_now(q) == ["a"]


async def test_served_by_priority_then_by_age() -> None:
    q = make_queue()
    q.add("a")
    q.add("b", priority=5)
    q.add("c")
    q.add("d", priority=5)
    q.add("low", priority=-100)
    assert await drain_now(q) == ["b", "d", "a", "c", "low"]


async def test_priority_is_the_maximum_of_old_and_new() -> None:
    q = make_queue()
    q.add("a", priority=5)
    q.add("a", priority=1)
    q.add("a")
    assert await q.get_with_priority() == ("a", 5, False)


async def test_raised_priority_goes_to_the_back_of_its_new_level() -> None:
    q = make_queue()
    q.add("a")
    q.add("b", priority=1)
    q.add("a", priority=1)
    assert await drain_now(q) == ["b", "a"]


async def test_unchanged_priority_keeps_the_place() -> None:
    q = make_queue()
    q.add("a")
    q.add("b")
    q.add("a", priority=0)
    assert await drain_now(q) == ["a", "b"]


async def test_plain_add_pulls_a_waiting_item_forward() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 10.0)
    assert len(q) == 0
    q.add("a")
    assert len(q) == 1
    assert await drain_now(q) == ["a"]
    clock.step(10.0)
    await settle()
    assert len(q) == 0  # the delayed add was merged, not kept (unlike the classic queue)


async def test_add_after_never_delays_a_ready_item() -> None:
    q = make_queue()
    q.add("a")
    q.add_after("a", 10.0)
    assert len(q) == 1


async def test_earlier_ready_at_wins() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 10.0)
    q.add_after("a", 5.0)
    q.add_after("a", 20.0)
    clock.step(5.0)
    await settle()
    assert len(q) == 1


async def test_waiting_item_gets_a_fresh_counter_when_it_becomes_ready() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("a", 1.0)
    q.add("b")
    clock.step(1.0)
    await settle()
    q.add("c")
    assert await drain_now(q) == ["b", "a", "c"]


async def test_waiting_items_become_ready_in_ready_at_order() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("c", 3.0)
    q.add_after("a", 1.0)
    q.add_after("b", 2.0)
    clock.step(5.0)
    assert await drain_now(q) == ["a", "b", "c"]


async def test_get_wakes_when_a_delay_expires() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    getter = asyncio.create_task(q.get())
    q.add_after("a", 2.0)
    await settle()
    assert not getter.done()
    clock.step(2.0)
    assert await asyncio.wait_for(getter, 1) == ("a", False)


async def test_locked_key_is_skipped_until_done() -> None:
    q = make_queue()
    q.add("a")
    q.add("b")
    assert await q.get() == ("a", False)
    q.add("a", priority=10)  # re-added while processing: waits for done
    assert len(q) == 2
    assert await q.get() == ("b", False)
    blocked = asyncio.create_task(q.get())
    await settle()
    assert not blocked.done()
    q.done("a")
    assert await asyncio.wait_for(blocked, 1) == ("a", False)


async def test_cancelled_waiter_passes_its_wake_up_on() -> None:
    q = make_queue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await settle()
    q.add("a")  # wakes `first`
    first.cancel()  # ... which is cancelled before it runs
    assert await asyncio.wait_for(second, 1) == ("a", False)
    assert first.cancelled()


async def test_adds_during_processing_collapse_into_one_more() -> None:
    q = make_queue()
    q.add("a")
    await q.get()
    for _ in range(5):
        q.add("a")
    q.done("a")
    assert await drain_now(q) == ["a"]


async def test_shutdown_is_immediate_even_with_ready_items() -> None:
    q = make_queue()
    q.add("a")
    q.add("b")
    waiter_q = make_queue()
    blocked = asyncio.create_task(waiter_q.get())
    await settle()
    q.shut_down()
    waiter_q.shut_down()
    assert q.shutting_down()
    assert (await q.get())[1]
    assert (await q.get_with_priority())[1:] == (0, True)
    assert (await blocked)[1]
    q.add("c")
    assert len(q) == 2  # adds after shutdown are ignored


async def test_shut_down_with_drain_is_immediate() -> None:
    q = make_queue()
    q.add("a")
    await q.get()
    await asyncio.wait_for(q.shut_down_with_drain(), 1)
    assert (await q.get())[1]


async def test_len_counts_ready_items_only() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add("a")
    q.add_after("b", 5.0)
    assert len(q) == 1
    await q.get()
    q.add("a")  # ready, but locked: still counted
    assert len(q) == 1
    clock.step(5.0)
    assert len(q) == 2


async def test_rate_limited_add_uses_the_limiter() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 1
    assert len(q) == 0
    clock.step(1.0)
    assert len(q) == 1
    await q.get()
    q.done("a")
    q.add("a", after=0.5, rate_limited=True)  # min(0.5, 2.0)
    assert q.num_requeues("a") == 2
    clock.step(0.5)
    assert len(q) == 1
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_retries_counted_only_for_positive_delays() -> None:
    clock = FakeClock()
    metrics = RecordingMetrics()
    q = make_queue(clock, metrics=metrics)
    q.add("a", priority=3)
    q.add_after("b", 0.0)
    q.add_after("c", 2.0, priority=-100)
    assert metrics.events == [("add", "a", 3), ("add", "b", 0), ("retry",)]
    clock.step(2.0)
    await settle()
    assert metrics.events[3:] == [("add", "c", -100)]
    assert await q.get_with_priority() == ("a", 3, False)
    q.done("a")
    assert metrics.events[4:] == [("get", "a", 3), ("done", "a")]


async def test_default_limiter_has_no_global_bucket() -> None:
    clock = FakeClock()
    q: PriorityQueue[int] = PriorityQueue(clock=clock)
    for i in range(150):
        q.add_rate_limited(i)
    clock.step(0.005)
    assert len(q) == 150


async def test_delays_work_on_the_real_clock() -> None:
    q: PriorityQueue[str] = PriorityQueue()
    q.add_after("a", 0.01)
    assert await asyncio.wait_for(q.get(), 5) == ("a", False)


async def test_a_raised_priority_of_a_ready_item_is_reported_to_the_metrics() -> None:
    clock = FakeClock()
    metrics = RecordingMetrics()
    q = make_queue(clock, metrics=metrics)
    q.add("a", priority=-100)
    q.add("a", priority=-100)  # unchanged: nothing to report
    q.add("a", priority=0)
    q.add_after("w", 1.0, priority=-100)
    q.add("w", after=1.0, priority=3)  # still waiting: counted when it becomes ready
    assert metrics.events == [
        ("add", "a", -100),
        ("priority", "a", -100, 0),
        ("retry",),
        ("retry",),
    ]
    clock.step(1.0)
    assert len(q) == 2
    assert metrics.events[4:] == [("add", "w", 3)]
