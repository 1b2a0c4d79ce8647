"""Timeouts measured on an injected :class:`~rayop.runtime.clock.Clock` rather than loop time.

``asyncio.timeout`` counts the event loop's time, which a :class:`rayop.testing.FakeClock` does
not move. :func:`clock_timeout` counts the injected clock's: a watchdog task sleeps on the clock
and, when it wakes, moves an ``asyncio.timeout`` scope's deadline to "now", so the body is
cancelled and the scope raises ``TimeoutError`` exactly as ``asyncio.timeout`` would. The
watchdog is owned by the scope: it is cancelled and awaited when the body ends, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from rayop.runtime.clock import Clock


@contextlib.asynccontextmanager
async def clock_timeout(clock: Clock, seconds: float | None) -> AsyncIterator[asyncio.Timeout]:
    """Cancels the body of ``async with`` after ``seconds`` on ``clock`` (None: never).

    Yields the underlying ``asyncio.Timeout``, whose ``expired()`` tells a real expiry from a
    ``TimeoutError`` the body raised itself. The watchdog task is cancelled and awaited before
    the scope is left, however the body ends.

    Raises:
        TimeoutError: the limit passed before the body finished.
    """
    async with asyncio.timeout(None) as scope:
        watchdog = None
        if seconds is not None:
            watchdog = asyncio.get_running_loop().create_task(
                _expire(scope, clock, seconds), name="clock-timeout"
            )
        try:
            yield scope
        finally:
            if watchdog is not None:
                watchdog.cancel()
                await asyncio.wait([watchdog])


async def _expire(scope: asyncio.Timeout, clock: Clock, seconds: float) -> None:
    await clock.sleep(seconds)
    scope.reschedule(asyncio.get_running_loop().time())
