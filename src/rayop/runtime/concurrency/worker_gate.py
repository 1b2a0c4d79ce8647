"""Lets at most ``limit`` of a controller's workers take work, a limit that can change at runtime.

A controller with adaptive concurrency starts as many workers as its ceiling; each holds a
permit of this gate while it waits for a request and reconciles it, so at most ``limit`` do.
Lowering the limit interrupts nothing: permits come back as workers finish, and no new permit is
granted until fewer than ``limit`` are held. The gate also integrates, over time, how long every
permitted worker was reconciling (the "all busy" time the adaptive law reads).
"""

from __future__ import annotations

from rayop.runtime.clock import Clock
from rayop.runtime.concurrency.waiters import Waiters


class WorkerGate:
    """A counting gate with an adjustable capacity and a busy-time meter.

    Args:
        limit: The first capacity (at least 1).
        clock: Time source of the busy-time meter.
    """

    def __init__(self, limit: int, clock: Clock) -> None:
        self._limit = max(1, limit)
        self._held = 0
        self._active = 0
        self._closed = False
        self._waiters = Waiters()
        self._clock = clock
        self._since = clock.now()
        self._busy_seconds = 0.0

    @property
    def limit(self) -> int:
        """How many workers may hold a permit at once."""
        return self._limit

    @property
    def held(self) -> int:
        """How many permits are held now."""
        return self._held

    @property
    def active(self) -> int:
        """How many permitted workers are reconciling now."""
        return self._active

    def busy_seconds(self) -> float:
        """Returns the seconds, so far, in which every permitted worker was reconciling."""
        self._account()
        return self._busy_seconds

    def set_limit(self, limit: int) -> None:
        """Changes the capacity (at least 1) and wakes the workers waiting for a permit."""
        self._account()
        self._limit = max(1, limit)
        self._waiters.wake_all()

    async def acquire(self) -> bool:
        """Blocks until a permit is free; returns False (no permit) once the gate is closed.

        A free permit is taken without yielding to the event loop.
        """
        while not self._closed and self._held >= self._limit:
            await self._waiters.wait()
        if self._closed:
            return False
        self._held += 1
        return True

    def release(self) -> None:
        """Returns a permit and wakes the waiting workers; never blocks."""
        self._held -= 1
        self._waiters.wake_all()

    def close(self) -> None:
        """Refuses every further permit and wakes all waiting workers (they get False)."""
        self._closed = True
        self._waiters.wake_all()

    def started(self) -> None:
        """Records that a permitted worker began a reconcile."""
        self._account()
        self._active += 1

    def finished(self) -> None:
        """Records that a permitted worker ended a reconcile."""
        self._account()
        self._active -= 1

    def _account(self) -> None:
        now = self._clock.now()
        if self._active >= self._limit:
            self._busy_seconds += max(0.0, now - self._since)
        self._since = now
