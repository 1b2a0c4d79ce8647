"""A clock for tests whose time moves only when the test says so."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta

from rayop.kube.clock import Clock

WALL_START = datetime(2026, 1, 1, tzinfo=UTC)
"""The wall time of a :class:`FakeClock` whose ``now()`` is 0."""


class FakeClock:
    """A :class:`~rayop.kube.clock.Clock` that stands still until :meth:`step` or :meth:`set`.

    Sleepers are woken, in deadline order, when the time reaches their deadline. The wall time
    is :data:`WALL_START` plus ``now()`` (or ``wall_start`` plus it).

    Args:
        start: The monotonic time at construction (seconds).
        wall_start: The wall time when ``now()`` is 0.
    """

    def __init__(self, start: float = 1000.0, *, wall_start: datetime = WALL_START) -> None:
        self._now = start
        self._wall_start = wall_start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self._now)

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
