"""controller-runtime's priority queue: one entry per key, served by priority, then by age.

Semantics follow controller-runtime's ``priorityqueue``
(``pkg/controller/priorityqueue/priorityqueue.go`` in kubernetes-sigs/controller-runtime):

- P1: at most one entry per key, holding an integer priority, an "added" counter and an optional
  ready-at time. Ready entries are served in order (priority descending, counter ascending);
  waiting entries become ready in order of ready-at time.
- P2: ``add(x, after=, rate_limited=, priority=)`` computes a delay (``after``; with
  ``rate_limited``, ``limiter.when(x)`` when ``after`` is 0, else the smaller of the two). A delay
  > 0 makes the entry wait and counts a retry. For a key already queued, the entry is ready if
  either the old or the new add is (a plain add pulls a waiting item forward; a delayed add never
  delays a ready one), otherwise the earlier time wins. The priority becomes the maximum of old
  and new (``None`` counts as 0); when it rises the counter is refreshed (and a ready entry's
  ``workqueue_depth`` moves to the new priority label).
- P3: a waiting entry that becomes ready gets a fresh counter.
- P4: ``get`` hands out the first ready entry whose key is not locked (handed out and not yet
  done) and removes it; a re-add during processing waits until ``done``.
- P5: shutdown is immediate: ``get`` reports shutdown even while ready items remain;
  ``shut_down_with_drain`` is the same as ``shut_down``. ``len`` counts ready entries only.

Deliberate difference from upstream: adds are applied synchronously, not buffered and
applied by a background task; within one event loop nothing can observe the difference except
that an add is visible to ``get`` and ``len`` at once.

The ready set is a heap of ``(-priority, counter, key)`` with lazy invalidation: an element is
stale when the key's entry no longer has that counter. A locked key is never pushed; ``done``
pushes it back with its unchanged (priority, counter), so it keeps its place in the order.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TypeVar, cast

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.concurrency.waiters import Waiters
from rayop.runtime.queues.delaying import DeadlineTimer
from rayop.runtime.queues.metrics_hooks import NOOP_QUEUE_METRICS, QueueMetrics
from rayop.runtime.queues.rate_limiters import RateLimiter, RequeueHistory

T = TypeVar("T", bound=Hashable)


@dataclass(slots=True)
class _Entry:
    priority: int
    counter: int
    ready_at: float | None


class PriorityQueue(RequeueHistory[T]):
    """A deduplicating workqueue that serves higher priorities first and never delays ready keys.

    Every item returned by :meth:`get` or :meth:`get_with_priority` must be passed to
    :meth:`done` exactly once.

    Args:
        name: the queue's name (metrics label).
        rate_limiter: decides the delay of rate-limited adds; defaults to
            ``default_controller_rate_limiter(priority_queue=True)`` (exponential 5 ms to 1000 s).
        clock: the time source that delays are measured on.
        metrics: the hooks that record workqueue metrics; none by default.
    """

    def __init__(self, *, name: str = "", rate_limiter: RateLimiter[T] | None = None,
                 clock: Clock = MONOTONIC, metrics: QueueMetrics[T] | None = None) -> None:
        self.name = name
        self._use_limiter(rate_limiter, priority_queue=True, clock=clock)
        self._clock = clock
        self._metrics: QueueMetrics[T] = metrics if metrics is not None else NOOP_QUEUE_METRICS
        self._entries: dict[T, _Entry] = {}
        self._ready: list[tuple[int, int, T]] = []
        self._waiting: list[tuple[float, int, int, T]] = []
        self._locked: set[T] = set()
        self._ready_count = 0
        self._counter = itertools.count()
        self._waiters = Waiters()
        self._shutting_down = False
        self._timer = DeadlineTimer(clock, self._promote_due)

    def add(
        self,
        item: T,
        *,
        after: float = 0.0,
        rate_limited: bool = False,
        priority: int | None = None,
    ) -> None:
        """Queues ``item`` (ready now, or after a delay); never blocks.

        Args:
            item: the key.
            after: seconds to wait before the item becomes ready (<= 0: ready now).
            rate_limited: ask the rate limiter for the delay (the smaller one wins when
                ``after`` is also given).
            priority: the priority (None means 0); an existing entry keeps the maximum.
        """
        if self._shutting_down:
            return
        delay = after
        if rate_limited:
            limited = self.rate_limiter.when(item)
            delay = limited if after == 0 else min(after, limited)
        ready_at: float | None = None
        if delay > 0:
            ready_at = self._clock.now() + delay
            self._metrics.on_retry()
        prio = 0 if priority is None else priority
        entry = self._entries.get(item)
        if entry is None:
            entry = _Entry(prio, next(self._counter), ready_at)
            self._entries[item] = entry
            if ready_at is None:
                self._became_ready(item, entry)
            else:
                self._push_waiting(item, entry)
            return
        old_priority = entry.priority
        raised = prio > old_priority
        if raised:
            entry.priority = prio
            entry.counter = next(self._counter)
        if entry.ready_at is None:
            if raised:
                self._metrics.on_priority_change(item, old_priority, prio)
                self._push_ready(item, entry)
        elif ready_at is None:
            entry.ready_at = None
            entry.counter = next(self._counter)
            self._became_ready(item, entry)
        elif ready_at < entry.ready_at or raised:
            entry.ready_at = min(ready_at, entry.ready_at)
            self._push_waiting(item, entry)

    def add_after(self, item: T, seconds: float, *, priority: int | None = None) -> None:
        """Queues ``item`` to become ready after ``seconds``; see :meth:`add`."""
        self.add(item, after=seconds, priority=priority)

    def add_rate_limited(self, item: T, *, priority: int | None = None) -> None:
        """Queues ``item`` after the delay the rate limiter gives it; see :meth:`add`."""
        self.add(item, rate_limited=True, priority=priority)

    async def get(self) -> tuple[T, bool]:
        """Blocks until a ready item is available and hands it out; the caller must call ``done``.

        Returns:
            ``(item, False)``, or ``(None, True)`` once the queue is shut down (at once, even if
            ready items remain).
        """
        item, _, shutdown = await self.get_with_priority()
        return item, shutdown

    async def get_with_priority(self) -> tuple[T, int, bool]:
        """Blocks like :meth:`get` and also returns the item's priority (0 on shutdown)."""
        while True:
            if self._shutting_down:
                return cast(T, None), 0, True
            if self._waiting and self._waiting[0][0] <= self._clock.now():
                self._promote_due(self._clock.now())
            ready = self._ready
            entries = self._entries
            while ready:
                _, counter, item = heapq.heappop(ready)
                entry = entries.get(item)
                if entry is not None and entry.counter == counter and entry.ready_at is None:
                    del entries[item]
                    self._ready_count -= 1
                    self._locked.add(item)
                    self._metrics.on_get(item, entry.priority)
                    return item, entry.priority, False
            await self._waiters.wait()

    def done(self, item: T) -> None:
        """Unlocks ``item`` after processing; a re-add made meanwhile becomes available again."""
        self._metrics.on_done(item)
        self._locked.discard(item)
        entry = self._entries.get(item)
        if entry is not None and entry.ready_at is None:
            self._push_ready(item, entry)

    def shut_down(self) -> None:
        """Shuts the queue down at once: every ``get`` reports shutdown from now on."""
        self._shutting_down = True
        self._timer.stop()
        self._waiters.wake_all()

    async def shut_down_with_drain(self) -> None:
        """Same as :meth:`shut_down` (the priority queue does not drain); does not block."""
        self.shut_down()

    def shutting_down(self) -> bool:
        """Tells whether the queue has been shut down."""
        return self._shutting_down

    def __len__(self) -> int:
        """Returns the number of ready entries (locked ones included, waiting ones excluded)."""
        if self._waiting and self._waiting[0][0] <= self._clock.now():
            self._promote_due(self._clock.now())
        return self._ready_count

    def _became_ready(self, item: T, entry: _Entry) -> None:
        self._ready_count += 1
        self._metrics.on_add(item, entry.priority)
        self._push_ready(item, entry)

    def _push_ready(self, item: T, entry: _Entry) -> None:
        if item in self._locked:
            return
        heapq.heappush(self._ready, (-entry.priority, entry.counter, item))
        self._waiters.wake_one()

    def _push_waiting(self, item: T, entry: _Entry) -> None:
        assert entry.ready_at is not None
        heapq.heappush(self._waiting, (entry.ready_at, -entry.priority, entry.counter, item))
        self._timer.arm(entry.ready_at)

    def _promote_due(self, deadline: float) -> None:
        now = max(self._clock.now(), deadline)
        waiting, entries = self._waiting, self._entries
        while waiting and waiting[0][0] <= now:
            ready_at, _, counter, item = heapq.heappop(waiting)
            entry = entries.get(item)
            if entry is None or entry.counter != counter or entry.ready_at != ready_at:
                continue
            entry.ready_at = None
            entry.counter = next(self._counter)
            self._became_ready(item, entry)
        while waiting and not self._is_current_waiting(waiting[0]):
            heapq.heappop(waiting)
        if waiting and not self._shutting_down:
            self._timer.arm(waiting[0][0])

    def _is_current_waiting(self, element: tuple[float, int, int, T]) -> bool:
        entry = self._entries.get(element[3])
        return entry is not None and entry.counter == element[2] and entry.ready_at == element[0]
