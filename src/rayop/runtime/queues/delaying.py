"""Delayed adds for the classic workqueue, and the clock-driven timer the queues share.

Semantics follow client-go's delaying queue (``util/workqueue/delaying_queue.go`` in
kubernetes/client-go):

- D1: ``add_after(x, d)`` is a no-op while shutting down; otherwise it counts a retry (even for
  ``d <= 0``), adds at once when ``d <= 0``, and otherwise records ``x`` as pending until
  ``now + d``.
- D2: pending items sit in a min-heap on their ready-at time; a pending item's time changes only
  when a new ``add_after`` asks for an earlier one. When an entry falls due it is passed to
  ``add`` (which deduplicates).
- D3: pending entries are independent of the main queue: ``add``, ``forget`` or ``done`` does not
  cancel them.
- D4: shutting down drops every pending entry.

Instead of a long-running loop with a heartbeat, a :class:`DeadlineTimer` task sleeps on the
injected clock until the earliest ready-at time and is re-armed when an earlier one arrives.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Hashable
from typing import TypeVar

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.queues.fifo import WorkQueue
from rayop.runtime.queues.metrics_hooks import QueueMetrics

T = TypeVar("T", bound=Hashable)


class DeadlineTimer:
    """Calls ``on_due(deadline)`` from a task once ``clock`` reaches the earliest armed deadline.

    Only one deadline is armed at a time: arming an earlier one replaces it, arming a later one
    is ignored (the callback is expected to re-arm for whatever remains). Needs a running loop.
    """

    def __init__(self, clock: Clock, on_due: Callable[[float], None]) -> None:
        self._clock = clock
        self._on_due = on_due
        self._task: asyncio.Task[None] | None = None
        self._deadline = 0.0

    def arm(self, deadline: float) -> None:
        """Makes sure ``on_due`` runs no later than ``deadline``; never blocks."""
        if self._task is not None:
            if self._deadline <= deadline:
                return
            self._task.cancel()
        self._deadline = deadline
        self._task = asyncio.get_running_loop().create_task(self._wait(deadline))

    def stop(self) -> None:
        """Cancels the armed deadline, if any."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _wait(self, deadline: float) -> None:
        await self._clock.sleep(deadline - self._clock.now())
        self._task = None
        self._on_due(deadline)


class DelayingQueue(WorkQueue[T]):
    """A :class:`WorkQueue` that can also add an item after a delay (client-go's delaying queue).

    Args:
        name: the queue's name (metrics label).
        clock: the time source that delays are measured on.
        metrics: the hooks that record workqueue metrics; none by default.
    """

    def __init__(
        self, *, name: str = "", clock: Clock = MONOTONIC, metrics: QueueMetrics[T] | None = None
    ) -> None:
        super().__init__(name=name, clock=clock, metrics=metrics)
        self._pending: dict[T, tuple[float, int, T]] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._timer = DeadlineTimer(clock, self._add_due)

    def add_after(self, item: T, seconds: float) -> None:
        """Adds ``item`` once ``seconds`` have passed on the clock; never blocks.

        Counts a retry (even when ``seconds <= 0``, which adds at once). An item already pending
        keeps the earlier of its two ready-at times. A no-op while shutting down.
        """
        if self._shutting_down:
            return
        self._metrics.on_retry()
        if seconds <= 0:
            self.add(item)
            return
        ready_at = self._clock.now() + seconds
        current = self._pending.get(item)
        if current is not None and current[0] <= ready_at:
            return
        entry = (ready_at, next(self._seq), item)
        self._pending[item] = entry
        heapq.heappush(self._heap, entry)
        self._timer.arm(ready_at)

    def shut_down(self) -> None:
        """Drops every pending delayed add, then shuts down as :meth:`WorkQueue.shut_down`."""
        self._drop_pending()
        super().shut_down()

    async def shut_down_with_drain(self) -> None:
        """Drops every pending delayed add, then blocks as :meth:`WorkQueue.shut_down_with_drain`."""
        self._drop_pending()
        await super().shut_down_with_drain()

    def _drop_pending(self) -> None:
        self._timer.stop()
        self._pending.clear()
        self._heap.clear()

    def _add_due(self, deadline: float) -> None:
        now = max(self._clock.now(), deadline)
        heap, pending = self._heap, self._pending
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            item = entry[2]
            if pending.get(item) is entry:
                del pending[item]
                self.add(item)
        while heap and pending.get(heap[0][2]) is not heap[0]:
            heapq.heappop(heap)
        if heap:
            self._timer.arm(heap[0][0])
