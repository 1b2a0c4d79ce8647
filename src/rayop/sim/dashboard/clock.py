"""The simulated Ray dashboard's clock seam: wall time for timestamps and an async sleep.

The simulated dashboard computes every job and Serve application state from "now", so a test
that swaps in a :class:`ManualClock` steps jobs through PENDING -> RUNNING -> SUCCEEDED
without sleeping. ``sim`` may not import ``rayop.runtime``, hence this small local protocol.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol

__all__ = ["LoopClock", "ManualClock", "SimClock"]


class SimClock(Protocol):
    """Time as the simulated dashboard sees it."""

    def time(self) -> float:
        """Returns seconds since the epoch (never blocks)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Blocks for ``seconds`` of this clock's time."""
        ...


class LoopClock:
    """Wall-clock seconds that advance with the event loop's time (so looptime can fake it).

    The offset between ``time.time()`` and ``loop.time()`` is taken on first use.
    """

    def __init__(self) -> None:
        self._offset: float | None = None

    def time(self) -> float:
        """Returns seconds since the epoch, advancing with the running loop's clock."""
        loop = asyncio.get_running_loop()
        if self._offset is None:
            self._offset = time.time() - loop.time()
        return self._offset + loop.time()

    async def sleep(self, seconds: float) -> None:
        """Blocks for ``seconds`` of loop time."""
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that only moves when :meth:`advance` is called (for tests).

    Args:
        start: The initial epoch time in seconds.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def time(self) -> float:
        """Returns the current fake epoch time."""
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Blocks until the clock has been advanced by ``seconds``."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    def advance(self, seconds: float) -> None:
        """Moves time forward and wakes every sleeper whose deadline has passed."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)
