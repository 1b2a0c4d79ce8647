"""A clock for tests whose time moves only when the test (or, with autojump, a sleeper) says so."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta

from rayop.kube.clock import Clock

WALL_START = datetime(2026, 1, 1, tzinfo=UTC)
"""The wall time of a :class:`FakeClock` whose ``now()`` is 0."""


class FakeClock:
    """A :class:`~rayop.kube.clock.Clock` whose time moves only on :meth:`step` or :meth:`set`.

    Sleepers are woken, in deadline order (ties in the order they slept), when the time reaches
    their deadline. The wall time is ``wall_start`` plus ``now()``. Every :meth:`sleep` call's
    length is recorded in :attr:`sleeps`.

    With ``autojump=True`` a sleep never blocks: it moves the time forward by its own length
    (waking the other sleepers now due), yields to the event loop once, and returns. Concurrent
    sleeps therefore add up rather than overlap; use it for code that sleeps between retries,
    where the test checks how long it waited rather than what ran meanwhile.

    Args:
        start: The monotonic time at construction (seconds).
        wall_start: The wall time when ``now()`` is 0.
        autojump: Let each sleep move the time by its length and return at once.
    """

    def __init__(
        self, start: float = 1000.0, *, wall_start: datetime = WALL_START, autojump: bool = False
    ) -> None:
        self._now = start
        self._wall_start = wall_start
        self.autojump = autojump
        self.sleeps: list[float] = []
        """The length of every :meth:`sleep` call so far, in call order."""
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        """Returns the current monotonic time (seconds)."""
        return self._now

    def wall(self) -> datetime:
        """Returns the current wall time: an aware UTC datetime that moves with :meth:`now`."""
        return self._wall_start + timedelta(seconds=self._now)

    def time(self) -> float:
        """Returns the wall time as seconds since the epoch (what ``time.time()`` would say).

        With it the clock also serves code that reads epoch seconds, such as the simulated
        Ray dashboard (``rayop.sim.dashboard.clock.SimClock``).
        """
        return self.wall().timestamp()

    async def sleep(self, seconds: float) -> None:
        """Blocks until the time has moved ``seconds`` forward (at once under autojump).

        A non-positive length only yields to the event loop once.
        """
        self.sleeps.append(seconds)
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        if self.autojump:
            self.step(seconds)
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        await fut

    def step(self, seconds: float) -> None:
        """Moves time forward by ``seconds`` and wakes every sleeper now due; never blocks."""
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
        """Returns the earliest pending sleeper's deadline, or None when nobody sleeps."""
        live = [d for d, _, f in self._sleepers if not f.done()]
        return min(live) if live else None

    def advance_to_next(self) -> bool:
        """Moves time to the earliest pending deadline and wakes its sleepers.

        Returns:
            False when nobody sleeps (the time stays put).
        """
        deadline = self.next_deadline()
        if deadline is None:
            return False
        self.set(deadline)
        return True


_: type[Clock] = FakeClock
