"""Tasks blocked on one condition, woken one at a time or all at once (workqueues, worker gate).

Waiters live on one asyncio event loop and need no locks: each is a future.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["Waiters"]


class Waiters:
    """Tasks blocked until what they wait for may be there; a :meth:`wake_one` wakes one of them."""

    __slots__ = ("_futures",)

    def __init__(self) -> None:
        self._futures: deque[asyncio.Future[None]] = deque()

    async def wait(self) -> None:
        """Blocks until :meth:`wake_one` picks this task or :meth:`wake_all` is called.

        A task cancelled after being picked passes its wake-up on to another waiter, so an item
        never sits in a queue (nor a permit unused) while another task is blocked.
        """
        waiter = asyncio.get_running_loop().create_future()
        self._futures.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.wake_one()
            raise

    def wake_one(self) -> None:
        """Wakes the longest-waiting task, if any; never blocks."""
        futures = self._futures
        while futures:
            waiter = futures.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def wake_all(self) -> None:
        """Wakes every waiting task; never blocks."""
        futures, self._futures = self._futures, deque()
        for waiter in futures:
            if not waiter.done():
                waiter.set_result(None)
