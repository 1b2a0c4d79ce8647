"""The simulated Ray dashboard's clock seam: wall time for timestamps and an async sleep.

The simulated dashboard computes every job and Serve application state from "now", so a test
that swaps in a manual clock (``rayop.testing.FakeClock`` has ``time()``) steps jobs through
PENDING -> RUNNING -> SUCCEEDED without sleeping. ``sim`` may not import ``rayop.runtime``, hence this small local protocol.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["LoopClock", "SimClock"]


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
