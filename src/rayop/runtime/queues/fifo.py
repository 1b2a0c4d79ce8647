"""The classic FIFO workqueue: deduplicating, never handing one item to two workers at once.

Semantics follow client-go's ``util/workqueue`` basic queue (``util/workqueue/queue.go`` in
kubernetes/client-go):

- Q1: every queued item is dirty and not processing, and is queued at most once.
- Q2: ``add`` is a no-op while shutting down or when the item is already dirty; an add of an
  item being processed marks it dirty and defers it until ``done``.
- Q3: ``get`` blocks while the queue is empty; after shutdown it keeps handing out queued items
  until none remain, then reports shutdown.
- Q4/Q5: ``done`` re-queues an item added while it was processing, so any number of such adds
  collapse into exactly one more processing.
- Q6: ``shut_down`` returns at once; ``shut_down_with_drain`` waits until nothing is processing,
  unless a later ``shut_down`` cancels the wait.
- Q7: ``len`` counts queued items only.

The queue lives on one asyncio event loop and needs no locks: waiting workers are futures, and
``get`` does not suspend when an item is available, which keeps per-item overhead low.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar, cast

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.concurrency.waiters import Waiters
from rayop.runtime.queues.metrics_hooks import NOOP_QUEUE_METRICS, QueueMetrics

T = TypeVar("T", bound=Hashable)


class WorkQueue(Generic[T]):
    """A FIFO queue of distinct items for a pool of workers.

    Every item returned by :meth:`get` must be passed to :meth:`done` exactly once.

    Args:
        name: the queue's name (metrics label; an unnamed queue normally records nothing).
        clock: the time source (used by subclasses that delay items).
        metrics: the hooks that record workqueue metrics; none by default.
    """

    def __init__(
        self, *, name: str = "", clock: Clock = MONOTONIC, metrics: QueueMetrics[T] | None = None
    ) -> None:
        self.name = name
        self._clock = clock
        self._metrics: QueueMetrics[T] = metrics if metrics is not None else NOOP_QUEUE_METRICS
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._waiters = Waiters()
        self._drainers = Waiters()

    def add(self, item: T) -> None:
        """Marks ``item`` as needing processing; never blocks.

        A no-op while shutting down or when the item is already waiting. An item being processed
        is queued again only when its worker calls :meth:`done`.
        """
        if self._shutting_down or item in self._dirty:
            return
        self._metrics.on_add(item, None)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._waiters.wake_one()

    async def get(self) -> tuple[T, bool]:
        """Blocks until an item is available and hands it to the caller, who must call ``done``.

        Returns:
            ``(item, False)``; or ``(None, True)`` once the queue is shut down and empty (the
            item is then ``None`` whatever ``T`` is, and must not be passed to ``done``).
        """
        while not self._queue and not self._shutting_down:
            await self._waiters.wait()
        if not self._queue:
            return cast(T, None), True
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        self._metrics.on_get(item, None)
        return item, False

    def done(self, item: T) -> None:
        """Marks the processing of ``item`` as finished; re-queues it if it was added meanwhile."""
        self._metrics.on_done(item)
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._waiters.wake_one()
        if self._drain and not self._processing:
            self._release_drainers()

    def shut_down(self) -> None:
        """Stops accepting items and wakes every waiter; returns at once.

        Workers keep receiving the items already queued until the queue is empty. A pending
        :meth:`shut_down_with_drain` stops waiting.
        """
        self._drain = False
        self._begin_shutdown()
        self._release_drainers()

    async def shut_down_with_drain(self) -> None:
        """Stops accepting items and blocks until no item is being processed.

        A later :meth:`shut_down` makes this return at once.
        """
        self._drain = True
        self._begin_shutdown()
        if not self._processing:
            return
        await self._drainers.wait()

    def shutting_down(self) -> bool:
        """Tells whether :meth:`shut_down` or :meth:`shut_down_with_drain` has been called."""
        return self._shutting_down

    def __len__(self) -> int:
        """Returns the number of queued items (not those being processed)."""
        return len(self._queue)

    def _begin_shutdown(self) -> None:
        self._shutting_down = True
        self._waiters.wake_all()

    def _release_drainers(self) -> None:
        self._drainers.wake_all()
