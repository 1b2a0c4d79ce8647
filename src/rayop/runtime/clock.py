"""Time as an injected dependency for the controller machinery, and a clock for tests.

Everything in :mod:`rayop.runtime` that reads the time, sleeps, backs off or expires something
takes a :class:`Clock` (defined in :mod:`rayop.kube.clock`, the layer below, and re-exported
here). Production code uses :class:`MonotonicClock`; tests use :class:`FakeClock`, whose time
only moves when the test calls :meth:`FakeClock.step`, or run on the real clock under
looptime's virtual event-loop time.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

from rayop.kube.clock import MONOTONIC, Clock, MonotonicClock

__all__ = ["MONOTONIC", "Clock", "FakeClock", "MonotonicClock"]


class FakeClock:
    """A clock that stands still until :meth:`step` or :meth:`set` moves it.

    Sleepers are woken, in deadline order, when the time reaches their deadline.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    def step(self, seconds: float) -> None:
        """Moves time forward by ``seconds`` and wakes every sleeper now due."""
        self.set(self._now + seconds)

    def set(self, when: float) -> None:
        """Moves time to ``when`` (never backwards) and wakes every sleeper now due."""
        self._now = max(self._now, when)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._sleepers)
            if not fut.done():
                fut.set_result(None)

    def has_sleepers(self) -> bool:
        """Tells whether any task is blocked in :meth:`sleep`."""
        return any(not f.done() for _, _, f in self._sleepers)

    def next_deadline(self) -> float | None:
        """The earliest pending sleeper's deadline, or None."""
        live = [d for d, _, f in self._sleepers if not f.done()]
        return min(live) if live else None


_: type[Clock] = FakeClock
