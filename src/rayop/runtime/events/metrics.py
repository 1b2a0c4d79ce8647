"""Counts the Events the recorder was asked for, and every one it did not write on its own.

client-go's recorder has no such counters; rayop adds them so that no event is lost silently:
an event folded into a series, dropped because the write queue is full, refused by the API
server, given up after its retries, or still queued at shutdown is counted here by reason.
"""

from __future__ import annotations

import weakref
from typing import Final, Literal

from prometheus_client import CollectorRegistry, Counter

UnsentReason = Literal["aggregated", "queue_full", "rejected", "retries_exhausted", "shutdown"]

UNSENT_REASONS: Final[tuple[UnsentReason, ...]] = (
    "aggregated",
    "queue_full",
    "rejected",
    "retries_exhausted",
    "shutdown",
)
"""The values of the ``reason`` label of ``rayop_events_unsent_total``:

- ``aggregated``: a repeat of an event already in a series; it only raised the series count,
  which reaches the API server with the series' next patch (client-go's behaviour).
- ``queue_full``: dropped because the pending writes had reached their memory budget.
- ``rejected``: the API server refused the write (a Status error); not retried, as client-go.
- ``retries_exhausted``: the API server could not be reached in 12 tries.
- ``shutdown``: still queued when the recorder closed.
"""


class EventMetrics:
    """The recorder's two counters, in ``registry`` (a private one unless given).

    Attributes:
        recorded: ``rayop_events_recorded_total{controller,type}``: every event asked for.
        unsent: ``rayop_events_unsent_total{controller,reason}``: events without a write of
            their own, by reason (see :data:`UNSENT_REASONS`).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.recorded = Counter(
            "rayop_events_recorded",
            "Events the controllers asked the event recorder to record.",
            ["controller", "type"],
            registry=self.registry,
        )
        self.unsent = Counter(
            "rayop_events_unsent",
            "Recorded events that were not written as their own API request, by reason.",
            ["controller", "reason"],
            registry=self.registry,
        )

    @classmethod
    def of(cls, registry: CollectorRegistry) -> EventMetrics:
        """Returns the event metrics registered in ``registry``, creating them once."""
        metrics = _BY_REGISTRY.get(registry)
        if metrics is None:
            metrics = _BY_REGISTRY[registry] = cls(registry)
        return metrics

    def initialise(self, controller: str) -> None:
        """Creates every series of one reporting controller at zero, so each is exported."""
        for event_type in ("Normal", "Warning"):
            self.recorded.labels(controller, event_type)
        for reason in UNSENT_REASONS:
            self.unsent.labels(controller, reason)

    def unsent_by_reason(self, controller: str) -> dict[str, int]:
        """Returns the ``rayop_events_unsent_total`` values of one controller, by reason."""
        sample = self.registry.get_sample_value
        name = "rayop_events_unsent_total"
        return {
            r: int(sample(name, {"controller": controller, "reason": r}) or 0)
            for r in UNSENT_REASONS
        }


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, EventMetrics] = (
    weakref.WeakKeyDictionary()
)
