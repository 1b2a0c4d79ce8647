"""Rate limiters that tell a workqueue how long to hold back a retried item.

A limiter answers :meth:`RateLimiter.when` with a delay in seconds and remembers whatever
per-item history it needs; :meth:`RateLimiter.forget` clears that history and
:meth:`RateLimiter.num_requeues` reports it. The formulas follow client-go's
``util/workqueue/default_rate_limiters.go`` (kubernetes/client-go):

- :class:`ItemExponentialFailureRateLimiter`: ``min(base * 2**n, max_delay)`` for the n-th
  failure (counted from 0) since the last forget.
- :class:`BucketRateLimiter`: a global token bucket (the client's
  :class:`~rayop.kube.throttle.TokenBucket`); it starts full, refills at ``qps`` and lets
  reservations run the balance negative, so later callers queue behind earlier ones.
- :class:`MaxOfRateLimiter`: asks every child (all side effects happen) and returns the maximum.
- :class:`ItemFastSlowRateLimiter`: ``fast`` for the first ``max_fast`` attempts, then ``slow``.

None of these block; they only compute delays.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from rayop.kube.throttle import TokenBucket
from rayop.runtime.clock import MONOTONIC, Clock

T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

_MAX_EXPONENT = 1000
"""Beyond this many failures ``base * 2**n`` cannot be represented; the delay is the maximum."""


class RateLimiter(Protocol[T_contra]):
    """Computes how long an item should wait before its next attempt; never blocks."""

    def when(self, item: T_contra) -> float:
        """Returns the delay in seconds for the next attempt of ``item`` and records the attempt."""
        ...

    def forget(self, item: T_contra) -> None:
        """Clears the per-item history of ``item`` (its queue membership is unaffected)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """Returns how many attempts of ``item`` have been recorded since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """Doubles an item's delay on each failure, from ``base`` up to ``max_delay`` seconds.

    Args:
        base: the delay of the first failure, in seconds.
        max_delay: the cap, in seconds.
    """

    def __init__(self, base: float, max_delay: float) -> None:
        if base < 0 or max_delay < 0:
            raise ValueError("base and max_delay must be non-negative")
        self._base = base
        self._max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """Returns ``min(base * 2**n, max_delay)`` where n counts earlier failures; records one more."""
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        if n >= _MAX_EXPONENT:
            return self._max_delay
        return min(self._base * 2.0**n, self._max_delay)

    def forget(self, item: Hashable) -> None:
        """Drops the failure count of ``item``."""
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """Returns the failure count of ``item``."""
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """A global token bucket: ``burst`` attempts are free, then one more every ``1/qps`` seconds.

    Every call to :meth:`when` reserves a token whether or not one is available; the balance may
    go negative, and the returned delay is the time until the reserved token exists. Reservations
    are never cancelled, so each later caller waits behind all earlier ones.

    Args:
        qps: the refill rate in tokens per second (> 0).
        burst: the bucket's capacity and initial content (>= 1).
        clock: the time source.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = MONOTONIC) -> None:
        if qps <= 0:
            raise ValueError("qps must be positive")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self._bucket = TokenBucket(qps, burst, clock=clock)

    def when(self, item: Hashable) -> float:
        """Reserves one token and returns the seconds until it is available (0 if at once)."""
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        """Does nothing: the bucket keeps no per-item history."""

    def num_requeues(self, item: Hashable) -> int:
        """Returns 0: the bucket keeps no per-item history."""
        return 0


class MaxOfRateLimiter:
    """Combines limiters: the delay is the largest any child returns; every child is consulted."""

    def __init__(self, *limiters: RateLimiter[Hashable]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        """Calls ``when`` on every child (so each records the attempt) and returns the maximum."""
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: Hashable) -> None:
        """Forwards the forget to every child."""
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """Returns the largest count any child reports."""
        return max(limiter.num_requeues(item) for limiter in self._limiters)


class ItemFastSlowRateLimiter:
    """Retries an item quickly ``max_fast`` times, then slowly.

    Args:
        fast: the delay, in seconds, of the first ``max_fast`` attempts.
        slow: the delay, in seconds, of every later attempt.
        max_fast: how many attempts get the fast delay.
    """

    def __init__(self, fast: float, slow: float, max_fast: int) -> None:
        self._fast = fast
        self._slow = slow
        self._max_fast = max_fast
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """Records an attempt and returns ``fast`` while the count is <= ``max_fast``, else ``slow``."""
        attempts = self._attempts.get(item, 0) + 1
        self._attempts[item] = attempts
        return self._fast if attempts <= self._max_fast else self._slow

    def forget(self, item: Hashable) -> None:
        """Drops the attempt count of ``item``."""
        self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """Returns the attempt count of ``item``."""
        return self._attempts.get(item, 0)


def default_controller_rate_limiter(
    priority_queue: bool, *, clock: Clock = MONOTONIC
) -> RateLimiter[Hashable]:
    """Builds the limiter a controller uses when none is given.

    Args:
        priority_queue: True for the priority queue, which uses the per-item exponential
            back-off (5 ms to 1000 s) alone; False for the classic queue, which also applies the
            global 10 qps / burst 100 bucket.
        clock: the time source of the bucket.

    Returns:
        A new limiter with no history.
    """
    exponential = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    if priority_queue:
        return exponential
    return MaxOfRateLimiter(exponential, BucketRateLimiter(10.0, 100, clock=clock))


_exponential: type[RateLimiter[Hashable]] = ItemExponentialFailureRateLimiter
_bucket: type[RateLimiter[Hashable]] = BucketRateLimiter
_max_of: type[RateLimiter[Hashable]] = MaxOfRateLimiter
_fast_slow: type[RateLimiter[Hashable]] = ItemFastSlowRateLimiter


T = TypeVar("T", bound=Hashable)


class RequeueHistory(Generic[T]):
    """The rate limiter of a queue, and the history it keeps, shared by both queue kinds.

    A queue mixes this in, calls :meth:`_use_limiter` from its constructor and asks
    ``self.rate_limiter.when(item)`` for the delay of a rate-limited add.
    """

    rate_limiter: RateLimiter[T]

    def _use_limiter(
        self, limiter: RateLimiter[T] | None, *, priority_queue: bool, clock: Clock
    ) -> None:
        self.rate_limiter = (
            limiter
            if limiter is not None
            else default_controller_rate_limiter(priority_queue, clock=clock)
        )

    def forget(self, item: T) -> None:
        """Tells the rate limiter to clear its history of ``item``; queue membership is unchanged."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Returns the rate limiter's count of attempts of ``item`` since it was forgotten."""
        return self.rate_limiter.num_requeues(item)
