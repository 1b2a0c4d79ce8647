"""The classic workqueue: invariants Q1-Q7 of controller-machinery.md §1.1 and its metrics hooks."""

from __future__ import annotations

import asyncio

from rayop.runtime.queues.fifo import WorkQueue
from rayop.testing import settle

from .recording_metrics import RecordingMetrics


async def test_fifo_and_duplicates_collapse_while_queued() -> None:
    q: WorkQueue[str] = WorkQueue()
    for item in ["a", "b", "a", "c", "b"]:
        q.add(item)
    assert len(q) == 3
    got = [(await q.get())[0] for _ in range(3)]
    assert got == ["a", "b", "c"]
    assert len(q) == 0


async def test_adds_during_processing_collapse_into_one_more_processing() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    item, shutdown = await q.get()
    assert (item, shutdown) == ("a", False)
    for _ in range(5):
        q.add("a")
    assert len(q) == 0  # Q7: deferred, not queued
    second = asyncio.create_task(q.get())
    await settle()
    assert not second.done()  # never two holders of one key
    q.done("a")
    assert await second == ("a", False)
    q.done("a")
    assert len(q) == 0
    third = asyncio.create_task(q.get())
    await settle()
    assert not third.done()
    third.cancel()


async def test_readded_item_joins_the_tail_at_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    await q.get()
    q.add("a")
    q.add("b")
    q.done("a")
    assert [(await q.get())[0], (await q.get())[0]] == ["b", "a"]


async def test_get_blocks_until_add() -> None:
    q: WorkQueue[int] = WorkQueue()
    waiter = asyncio.create_task(q.get())
    await settle()
    assert not waiter.done()
    q.add(7)
    assert await waiter == (7, False)


async def test_each_add_wakes_one_of_several_waiters() -> None:
    q: WorkQueue[int] = WorkQueue()
    waiters = [asyncio.create_task(q.get()) for _ in range(3)]
    await settle()
    q.add(1)
    q.add(2)
    await settle()
    done = sorted(w.result()[0] for w in waiters if w.done())
    assert done == [1, 2]
    q.shut_down()
    assert [(await w)[1] for w in waiters if not w.done()] == [True]


async def test_cancelled_waiter_passes_its_wake_up_on() -> None:
    q: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await settle()
    q.add("a")  # wakes `first`
    first.cancel()  # ... which is cancelled before it runs
    assert await asyncio.wait_for(second, 1) == ("a", False)
    assert first.cancelled()


async def test_add_is_a_noop_after_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.shut_down()
    q.add("a")
    assert len(q) == 0
    assert q.shutting_down()
    assert (await q.get())[1]


async def test_shutdown_keeps_handing_out_queued_items_until_drained() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    q.shut_down()
    assert await q.get() == ("a", False)
    assert await q.get() == ("b", False)
    assert (await q.get())[1]


async def test_shutdown_wakes_blocked_getters() -> None:
    q: WorkQueue[str] = WorkQueue()
    waiters = [asyncio.create_task(q.get()) for _ in range(3)]
    await settle()
    q.shut_down()
    assert [shutdown for _, shutdown in await asyncio.gather(*waiters)] == [True] * 3


async def test_item_readded_before_shutdown_is_requeued_at_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    await q.get()
    q.add("a")
    q.shut_down()
    q.done("a")
    assert await q.get() == ("a", False)
    q.done("a")
    assert (await q.get())[1]


async def test_shut_down_with_drain_waits_for_processing() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    await q.get()
    await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await settle()
    assert not drain.done()
    assert q.shutting_down()
    q.done("a")
    await settle()
    assert not drain.done()
    q.done("b")
    await asyncio.wait_for(drain, 1)


async def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")  # queued, not processing
    await asyncio.wait_for(q.shut_down_with_drain(), 1)
    assert await q.get() == ("a", False)


async def test_later_shut_down_cancels_the_drain_wait() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await settle()
    assert not drain.done()
    q.shut_down()
    await asyncio.wait_for(drain, 1)


async def test_metrics_hooks() -> None:
    metrics = RecordingMetrics()
    q: WorkQueue[str] = WorkQueue(name="q", metrics=metrics)
    q.add("a")
    q.add("a")  # dirty: not counted
    await q.get()
    q.add("a")  # processing but not dirty: counted
    q.add("a")  # dirty again: not counted
    q.done("a")
    await q.get()
    q.done("a")
    assert metrics.events == [
        ("add", "a", None),
        ("get", "a", None),
        ("add", "a", None),
        ("done", "a"),
        ("get", "a", None),
        ("done", "a"),
    ]
