"""Time as an injected dependency, and the Kubernetes timestamp format.

Everything in rayop that reads the time, sleeps, backs off, throttles or expires something takes
a :class:`Clock`. It is defined here, in the lowest layer, so that the client (throttling,
Retry-After sleeps) and the controller machinery share one seam; :mod:`rayop.runtime.clock`
re-exports it beside its test clock. :class:`MonotonicClock` reads the event loop's time, so
looptime can virtualise it.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of monotonic time in seconds and a way to sleep on it."""

    def now(self) -> float:
        """Returns the current monotonic time in seconds; never blocks."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Blocks the calling task until ``now()`` has advanced by ``seconds``."""
        ...


class MonotonicClock:
    """The real clock: the event loop's monotonic time (time.monotonic outside a running loop)."""

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


MONOTONIC: Clock = MonotonicClock()
"""The shared real clock."""


def micro_time(moment: datetime) -> str:
    """Formats a Kubernetes MicroTime (RFC 3339 with microseconds, UTC); never blocks."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_: type[Clock] = MonotonicClock
