"""Reads the bench's series out of scrapes: sampled worker gauges and API latency.

Scrapes are :class:`rayop.advise.exposition.Snapshot` objects (the same reader ``rayop advise``
uses).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rayop.advise.exposition import Snapshot


@dataclass(frozen=True, slots=True)
class WorkerSample:
    """One 0.5 s sample of the controller's gauges."""

    t: float
    """Seconds since the measured phase began."""
    active_workers: float
    max_workers: float
    queue_depth: float
    rss_bytes: float = 0.0
    longest_running: float = 0.0
    """workqueue_longest_running_processor_seconds: how long the oldest running reconcile has run."""
    api_latency: float | None = None
    """Mean request latency since the previous sample, client throttling excluded (None: no
    request in between)."""


def busy_fraction(series: Sequence[WorkerSample]) -> float:
    """Returns the fraction of samples in which every worker was busy (0 when none)."""
    if not series:
        return 0.0
    busy = sum(1 for s in series if s.max_workers > 0 and s.active_workers >= s.max_workers)
    return busy / len(series)


def mean_active(series: Sequence[WorkerSample]) -> float:
    """Returns the mean number of busy workers over the samples (0 when none)."""
    return sum(s.active_workers for s in series) / len(series) if series else 0.0


def sample_workers(snapshot: Snapshot, controller: str, t: float, rss: float) -> WorkerSample:
    """Reads ``controller``'s active/max workers and its queue depth out of one scrape."""
    return WorkerSample(
        t=t,
        active_workers=snapshot.total("controller_runtime_active_workers", controller=controller),
        max_workers=snapshot.total(
            "controller_runtime_max_concurrent_reconciles", controller=controller
        ),
        queue_depth=snapshot.total("workqueue_depth", name=controller),
        rss_bytes=rss,
        longest_running=snapshot.total(
            "workqueue_longest_running_processor_seconds", name=controller
        ),
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """Returns the ``q`` quantile of exact values (nearest rank; None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    index = max(0, math.ceil(q * len(ordered)) - 1)
    return ordered[min(index, len(ordered) - 1)]
