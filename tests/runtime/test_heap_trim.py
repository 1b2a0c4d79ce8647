"""Tests of the heap trimmer: it trims only after the RSS has grown, and paces on the clock."""

from __future__ import annotations

import asyncio

import pytest

from rayop.runtime.process.heap_trim import (
    HeapTrimmer,
    find_malloc_trim,
    resident_bytes,
    trim_heap_periodically,
)
from rayop.testing import FakeClock

MB = 2**20


async def _turns() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


class FakeHeap:
    """An RSS that tests set, and a trim that gives back what was marked free."""

    def __init__(self, rss: int) -> None:
        self.rss = rss
        self.free = 0
        self.trims = 0

    def read(self) -> int:
        return self.rss

    def trim(self) -> int:
        self.trims += 1
        self.rss -= self.free
        self.free = 0
        return 1


def test_the_first_check_trims_then_only_growth_past_the_threshold_does() -> None:
    heap = FakeHeap(100 * MB)
    heap.free = 20 * MB
    trimmer = HeapTrimmer(trim=heap.trim, rss=heap.read, growth=8 * MB)
    assert trimmer.check()
    assert heap.rss == 80 * MB
    heap.rss += 7 * MB
    assert not trimmer.check()
    heap.rss += 2 * MB
    heap.free = 6 * MB
    assert trimmer.check()
    assert heap.rss == 83 * MB
    assert (trimmer.trims, trimmer.released_bytes) == (2, 26 * MB)


def test_live_growth_becomes_the_new_baseline_and_is_not_trimmed_again() -> None:
    heap = FakeHeap(50 * MB)
    trimmer = HeapTrimmer(trim=heap.trim, rss=heap.read, growth=8 * MB)
    trimmer.check()
    heap.rss = 70 * MB  # all of it live: a trim gives nothing back
    assert trimmer.check()
    for _ in range(10):
        assert not trimmer.check()
    assert heap.trims == 2


def test_a_shrinking_rss_lowers_the_baseline() -> None:
    heap = FakeHeap(60 * MB)
    trimmer = HeapTrimmer(trim=heap.trim, rss=heap.read, growth=8 * MB)
    trimmer.check()
    heap.rss = 40 * MB
    assert not trimmer.check()
    heap.rss = 49 * MB
    assert trimmer.check()


def test_without_a_trim_function_nothing_happens() -> None:
    trimmer = HeapTrimmer(rss=lambda: 1)
    trimmer._trim = None
    assert not trimmer.available
    assert not trimmer.check()


async def test_checks_are_paced_by_the_clock_and_end_on_cancel() -> None:
    clock = FakeClock()
    heap = FakeHeap(10 * MB)
    trimmer = HeapTrimmer(trim=heap.trim, rss=heap.read, growth=MB)
    task = asyncio.create_task(trim_heap_periodically(clock=clock, interval=5, trimmer=trimmer))
    await _turns()
    assert heap.trims == 0
    clock.step(5)
    await _turns()
    assert heap.trims == 1
    heap.rss += 2 * MB
    clock.step(4.9)
    await _turns()
    assert heap.trims == 1
    clock.step(0.1)
    await _turns()
    assert heap.trims == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_non_positive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="must be > 0"):
        await trim_heap_periodically(interval=0)


def test_glibc_trim_and_rss_work_on_this_machine() -> None:
    trim = find_malloc_trim()
    assert trim is not None  # the tests run on glibc (Debian)
    assert trim() in (0, 1)
    assert resident_bytes() > 10 * MB
