"""A QueueMetrics implementation for queue tests: records every hook call, in order."""

from __future__ import annotations

from collections.abc import Hashable

from rayop.runtime.queues.metrics_hooks import QueueMetrics


class RecordingMetrics:
    """Records every metrics hook call as a tuple, such as ``("add", item, priority)``."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def on_add(self, item: Hashable, priority: int | None) -> None:
        self.events.append(("add", item, priority))

    def on_priority_change(self, item: Hashable, old: int, new: int) -> None:
        self.events.append(("priority", item, old, new))

    def on_get(self, item: Hashable, priority: int | None) -> None:
        self.events.append(("get", item, priority))

    def on_done(self, item: Hashable) -> None:
        self.events.append(("done", item))

    def on_retry(self) -> None:
        self.events.append(("retry",))

    def update_unfinished_work(self) -> None:
        self.events.append(("unfinished",))


_: type[QueueMetrics[Hashable]] = RecordingMetrics
