"""Time as an injected dependency, and the Kubernetes timestamp formats.

Everything in rayop that reads the time, sleeps, backs off, throttles, expires something or
stamps a status takes a :class:`Clock`. It is defined here, in the lowest layer, so that the
client (throttling, Retry-After sleeps), the controller machinery and the controllers share one
seam; :mod:`rayop.runtime.clock` re-exports it. A clock has two faces that move together:
:meth:`Clock.now` (monotonic seconds, for intervals and deadlines) and :meth:`Clock.wall` (an
aware UTC datetime, for timestamps written to objects and for wall-clock deadlines). The real
:class:`MonotonicClock` reads the event loop's time, so looptime can virtualise both faces; the
test clock is :class:`rayop.testing.FakeClock`.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of monotonic and wall-clock time, and a way to sleep on it."""

    def now(self) -> float:
        """Returns the current monotonic time in seconds; never blocks."""
        ...

    def wall(self) -> datetime:
        """Returns the current wall-clock time as an aware UTC datetime; never blocks.

        It advances exactly as :meth:`now` does.
        """
        ...

    async def sleep(self, seconds: float) -> None:
        """Blocks the calling task until ``now()`` has advanced by ``seconds``."""
        ...


class MonotonicClock:
    """The real clock: the event loop's monotonic time (time.monotonic outside a running loop).

    Its wall time is the system's time when first read on an event loop, advanced from then on
    by the loop's clock, so under a virtual-time loop (looptime) timestamps and wall-clock
    deadlines move with the virtual time.
    """

    def __init__(self) -> None:
        self._anchors: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[float, float]]
        self._anchors = weakref.WeakKeyDictionary()

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def wall(self) -> datetime:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return datetime.now(UTC)
        anchor = self._anchors.get(loop)
        if anchor is None:
            anchor = self._anchors[loop] = (time.time(), loop.time())
        return datetime.fromtimestamp(anchor[0] + loop.time() - anchor[1], UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


MONOTONIC: Clock = MonotonicClock()
"""The shared real clock."""


def micro_time(moment: datetime) -> str:
    """Formats a Kubernetes MicroTime (RFC 3339 with microseconds, UTC); never blocks."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_: type[Clock] = MonotonicClock
