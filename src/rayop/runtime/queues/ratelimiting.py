"""The classic rate-limiting workqueue: a delaying queue whose retries a limiter spaces out.

Semantics follow client-go's rate-limiting queue (``util/workqueue/rate_limiting_queue.go`` in
kubernetes/client-go):

- RL1: ``add_rate_limited(x)`` is ``add_after(x, limiter.when(x))``; ``when`` runs, and so counts
  a failure, even while the queue is shutting down.
- RL2: ``forget(x)`` clears the limiter's history of ``x`` only; it does not touch the queue.
- RL3: ``num_requeues(x)`` is the limiter's count for ``x``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.queues.delaying import DelayingQueue
from rayop.runtime.queues.metrics_hooks import QueueMetrics
from rayop.runtime.queues.rate_limiters import RateLimiter, RequeueHistory

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(DelayingQueue[T], RequeueHistory[T]):
    """A FIFO workqueue with delayed and rate-limited adds.

    Args:
        name: the queue's name (metrics label).
        rate_limiter: decides the delay of :meth:`add_rate_limited`; defaults to
            ``default_controller_rate_limiter(priority_queue=False, clock=clock)`` (exponential
            5 ms to 1000 s, and the global 10 qps / burst 100 bucket).
        clock: the time source that delays are measured on.
        metrics: the hooks that record workqueue metrics; none by default.
    """

    def __init__(self, *, name: str = "", rate_limiter: RateLimiter[T] | None = None,
                 clock: Clock = MONOTONIC, metrics: QueueMetrics[T] | None = None) -> None:
        super().__init__(name=name, clock=clock, metrics=metrics)
        self._use_limiter(rate_limiter, priority_queue=False, clock=clock)

    def add_rate_limited(self, item: T) -> None:
        """Adds ``item`` after the delay the rate limiter gives it; never blocks.

        The limiter records the attempt even while shutting down (when the add itself is a no-op).
        """
        self.add_after(item, self.rate_limiter.when(item))
