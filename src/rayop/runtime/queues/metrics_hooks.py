"""The hooks a queue calls so that workqueue metrics can be computed outside it.

A queue calls these at the moments client-go's queues record their metrics
(``util/workqueue/metrics.go`` in kubernetes/client-go, as controller-runtime's
``pkg/metrics/workqueue.go`` exports them): ``on_add`` for an add of an item that is not already
dirty (classic queue) or that becomes ready (priority queue), ``on_priority_change`` when the
priority queue raises the priority of an item already counted by ``on_add`` and not yet handed out
(so ``workqueue_depth{priority}`` follows it), ``on_get`` when an item is handed to a worker,
``on_done`` when the worker finishes, ``on_retry`` for each counted retry. The queue's owner calls
``update_unfinished_work`` periodically (every 500 ms under a controller).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, TypeVar

T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class QueueMetrics(Protocol[T_contra]):
    """Receives the events from which workqueue_* metrics are derived; never blocks."""

    def on_add(self, item: T_contra, priority: int | None) -> None:
        """An item entered the queue (not a deduplicated add); ``priority`` is None for the classic queue."""
        ...

    def on_priority_change(self, item: T_contra, old: int, new: int) -> None:
        """A ready item (counted by ``on_add``, not yet handed out) changed priority."""
        ...

    def on_get(self, item: T_contra, priority: int | None) -> None:
        """An item was handed to a worker; queue duration runs from its first counted add to now."""
        ...

    def on_done(self, item: T_contra) -> None:
        """A worker finished an item; work duration runs from its get to now."""
        ...

    def on_retry(self) -> None:
        """A retry (a delayed or rate-limited add) was counted."""
        ...

    def update_unfinished_work(self) -> None:
        """Recomputes the unfinished-work and longest-running-processor gauges."""
        ...


class NoopQueueMetrics:
    """Metrics hooks that record nothing: the default for an unnamed queue."""

    def on_add(self, item: Hashable, priority: int | None) -> None:
        pass

    def on_priority_change(self, item: Hashable, old: int, new: int) -> None:
        pass

    def on_get(self, item: Hashable, priority: int | None) -> None:
        pass

    def on_done(self, item: Hashable) -> None:
        pass

    def on_retry(self) -> None:
        pass

    def update_unfinished_work(self) -> None:
        pass


NOOP_QUEUE_METRICS: QueueMetrics[Hashable] = NoopQueueMetrics()
"""The shared no-op hooks."""
