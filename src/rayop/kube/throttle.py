"""Client-side request throttling: a token bucket with ``qps`` and ``burst``.

The bucket behaves like golang.org/x/time/rate as client-go uses it: it holds at most ``burst``
tokens, starts full, refills continuously at ``qps`` tokens per second. A negative ``qps``
disables throttling.

:meth:`TokenBucket.reserve` hands out reservations in call order (the bucket may go into debt);
the workqueue's limiter uses it. :meth:`TokenBucket.wait`, the client's path, is fair across
flows (:mod:`rayop.kube.request_flow`): a request that finds a token and no one waiting takes it
at once; otherwise it joins its flow's queue, and each token, as it becomes available, goes to
the head of the next flow in round-robin order. Within a flow requests are served in arrival
order; a flow with one waiter waits at most one token per other waiting flow, however long the
other flows' queues are; the rate and burst are the same as in call order (a token is handed
out only when the bucket holds one).

Time comes from an injected :class:`~rayop.kube.clock.Clock`; the default reads the event
loop's clock, so looptime can virtualise it. The workqueue's global
``rayop.runtime.queues.rate_limiters.BucketRateLimiter`` is built on the same bucket.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from rayop.kube.clock import MONOTONIC, Clock
from rayop.kube.request_flow import current_flow

_EPSILON = 1e-9
"""Slack for float rounding when a refill is compared with a whole token."""


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
        # The waiting requests per flow; the dict's order is the round-robin order.
        self._queues: dict[str | None, deque[asyncio.Future[None]]] = {}
        self._dispatcher: asyncio.Task[None] | None = None

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

    @property
    def waiting(self) -> int:
        """How many :meth:`wait` callers are queued for a token."""
        return sum(len(q) for q in self._queues.values())

    def _refill(self) -> None:
        now = self._clock.now()
        if self._last is not None:
            self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._qps)
        self._last = now

    def reserve(self) -> float:
        """Takes one token now and returns how long the caller must wait for it; never blocks.

        Reservations are served in call order: the bucket may go into debt, and each later
        reservation waits for the debt before it as well.
        """
        if not self.enabled:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    async def wait(self, flow: str | None = None) -> float:
        """Blocks until this caller's turn for a token comes, fairly across flows, and takes it.

        Args:
            flow: The request's flow; by default the context's
                (:data:`rayop.kube.request_flow.current_flow`).

        Returns:
            The seconds actually waited according to the clock (0.0 when disabled or a token
            was available at once).
        """
        if not self.enabled:
            return 0.0
        self._refill()
        if not self._queues and self._tokens >= 1.0 - _EPSILON:
            self._tokens -= 1.0
            return 0.0
        key = current_flow.get() if flow is None else flow
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(key, deque()).append(granted)
        if self._dispatcher is None:
            self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch())
        start = self._clock.now()
        try:
            await granted
        except asyncio.CancelledError:
            self._withdraw(key, granted)
            raise
        return max(0.0, self._clock.now() - start)

    def _withdraw(self, key: str | None, granted: asyncio.Future[None]) -> None:
        """A cancelled waiter leaves its queue, or gives its token back when it had one (as
        rate.Reservation.Cancel does), so cancelled requests do not slow the ones behind."""
        if granted.done() and not granted.cancelled():
            self._tokens = min(float(self._burst), self._tokens + 1.0)
            return
        queue = self._queues.get(key)
        if queue is not None:
            with contextlib.suppress(ValueError):
                queue.remove(granted)
            if not queue:
                del self._queues[key]
        if not self._queues and self._dispatcher is not None:
            self._dispatcher.cancel()
            self._dispatcher = None

    async def _dispatch(self) -> None:
        """Hands each token, as it becomes available, to the next flow's first waiter."""
        me = asyncio.current_task()
        try:
            while self._queues:
                self._refill()
                if self._tokens < 1.0 - _EPSILON:
                    await self._clock.sleep((1.0 - self._tokens) / self._qps)
                    continue
                key = next(iter(self._queues))
                queue = self._queues.pop(key)
                granted = queue.popleft()
                if queue:
                    self._queues[key] = queue  # to the back of the round
                if granted.done():
                    continue
                self._tokens -= 1.0
                granted.set_result(None)
        finally:
            if self._dispatcher is me:
                self._dispatcher = None
