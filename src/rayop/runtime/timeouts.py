"""Timeouts measured on an injected :class:`~rayop.runtime.clock.Clock` rather than loop time.

``asyncio.timeout`` counts the event loop's time, which a :class:`rayop.testing.FakeClock` does
not move. :class:`ClockTimeout` counts the injected clock's: a watchdog task sleeps on the clock
and, when it wakes, moves an ``asyncio.timeout`` scope's deadline to "now", so the body is
cancelled and the scope raises ``TimeoutError`` exactly as ``asyncio.timeout`` would. The
watchdog is owned by the scope: it is cancelled and awaited when the body ends, however it ends.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from rayop.runtime.clock import Clock


class ClockTimeout:
    """Cancels the body of ``async with`` after ``seconds`` on ``clock``, raising TimeoutError.

    ``seconds=None`` means no limit (the body is never cancelled). A body that raises
    ``TimeoutError`` itself is not taken for an expiry: :meth:`expired` tells them apart.

    Args:
        clock: The clock the limit is measured on.
        seconds: The limit in seconds; None for none.
    """

    def __init__(self, clock: Clock, seconds: float | None) -> None:
        self._clock = clock
        self._seconds = seconds
        self._scope = asyncio.timeout(None)
        self._watchdog: asyncio.Task[None] | None = None

    def expired(self) -> bool:
        """Tells whether the limit passed and the body was cancelled for it."""
        return self._scope.expired()

    async def __aenter__(self) -> ClockTimeout:
        await self._scope.__aenter__()
        if self._seconds is not None:
            self._watchdog = asyncio.get_running_loop().create_task(
                self._expire(self._seconds), name="clock-timeout"
            )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.cancel()
        try:
            await self._scope.__aexit__(exc_type, exc, tb)
        finally:
            if watchdog is not None:
                await asyncio.wait([watchdog])

    async def _expire(self, seconds: float) -> None:
        await self._clock.sleep(seconds)
        self._scope.reschedule(asyncio.get_running_loop().time())


def clock_timeout(clock: Clock, seconds: float | None) -> ClockTimeout:
    """Returns an ``async with`` scope cancelled after ``seconds`` on ``clock`` (None: never).

    Raises (on leaving the scope):
        TimeoutError: the limit passed before the body finished.
    """
    return ClockTimeout(clock, seconds)
