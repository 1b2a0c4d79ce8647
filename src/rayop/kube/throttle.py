"""Client-side request throttling: a token bucket with ``qps`` and ``burst``.

The bucket behaves like golang.org/x/time/rate as client-go uses it: it holds at most ``burst``
tokens, starts full, refills continuously at ``qps`` tokens per second, and hands out
reservations in arrival order, so a waiter never overtakes an earlier one. A negative ``qps``
disables throttling.

Time comes from an injected :class:`~rayop.kube.clock.Clock`; the default reads the event
loop's clock, so looptime can virtualise it. The workqueue's global
``rayop.runtime.queues.rate_limiters.BucketRateLimiter`` is built on the same bucket.
"""

from __future__ import annotations

import asyncio

from rayop.kube.clock import MONOTONIC, Clock


class TokenBucket:
    """A token bucket that delays callers to at most ``qps`` per second after a ``burst``.

    Args:
        qps: Tokens added per second; a negative value disables throttling (every wait is 0).
        burst: Bucket capacity, at least 1 when enabled.
        clock: Where the time and sleeps come from.

    Raises:
        ValueError: ``qps`` is 0, or ``burst`` < 1 while enabled.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = MONOTONIC) -> None:
        if qps == 0:
            raise ValueError("qps must be positive, or negative to disable throttling")
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1")
        self._qps = qps
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last: float | None = None

    @property
    def enabled(self) -> bool:
        """Whether the bucket throttles at all (False when qps < 0)."""
        return self._qps > 0

    @property
    def qps(self) -> float:
        """Tokens per second (negative when disabled)."""
        return self._qps

    @property
    def burst(self) -> int:
        """The bucket's capacity."""
        return self._burst

    def reserve(self) -> float:
        """Takes one token now and returns how long the caller must wait for it; never blocks.

        Reservations are served in call order: the bucket may go into debt, and each later
        reservation waits for the debt before it as well.
        """
        if not self.enabled:
            return 0.0
        now = self._clock.now()
        if self._last is not None:
            self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    async def wait(self) -> float:
        """Blocks until a token is available and takes it.

        Returns:
            The seconds actually waited according to the clock (0.0 when disabled or a token
            was available at once).
        """
        delay = self.reserve()
        if delay <= 0:
            return 0.0
        start = self._clock.now()
        try:
            await self._clock.sleep(delay)
        except asyncio.CancelledError:
            self._refund(delay)
            raise
        return max(0.0, self._clock.now() - start)

    def _refund(self, delay: float) -> None:
        # A cancelled waiter gives its token back, as rate.Reservation.Cancel does, so
        # cancelled requests do not slow the ones behind them.
        if self.enabled and delay > 0:
            self._tokens = min(float(self._burst), self._tokens + 1.0)
