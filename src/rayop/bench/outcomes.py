"""The figures a concurrency verdict rests on: outcomes per value, run-to-run noise, lost events.

An :class:`Outcome` is one ``--reconcile-concurrency`` value's measured result, over every run of
it (``rayop bench --repeat``): the median time until all clusters were ready and queue wait
p99, and the reconcile error share. The noise is how much the same setting moved between runs
(the largest relative spread of time-to-ready among the repeated values); with one run per
value it is not measured and :data:`NOISE_ASSUMED` stands in, which the verdict says.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rayop.bench.results import ConcurrencyResult

NOISE_ASSUMED = 0.10
"""The run-to-run noise assumed when every value ran once (10 % of time to ready)."""
NOISE_FLOOR = 0.05
"""A measured noise below this is taken as this (two runs can agree by chance)."""
LOST_EVENT_REASONS = ("queue_full", "rejected", "retries_exhausted", "shutdown")
"""``rayop_events_unsent_total`` reasons that mean an event was lost (``aggregated`` is not:
the event raised a series count, as client-go's correlator does)."""


def lost_events(r: ConcurrencyResult) -> dict[str, int]:
    """Returns the events the run lost, by reason (empty: none, or not exported)."""
    unsent = r.events_unsent_by_reason or {}
    return {k: v for k, v in unsent.items() if k in LOST_EVENT_REASONS and v > 0}


def error_share(r: ConcurrencyResult) -> float:
    """Reconcile errors per reconcile (0 when nothing was reconciled)."""
    return r.reconcile_errors / r.reconciles if r.reconciles else 0.0


def api_latency(r: ConcurrencyResult) -> float | None:
    """The mean API latency without client throttling (with it when that is unknown)."""
    return (
        r.api_server_latency_mean if r.api_server_latency_mean is not None else r.api_latency_mean
    )


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one fixed concurrency value achieved, over its runs."""

    concurrency: int
    runs: tuple[ConcurrencyResult, ...]

    @property
    def ready(self) -> float:
        """Median seconds until all clusters were ready."""
        return statistics.median(r.seconds_until_all_ready for r in self.runs)

    @property
    def wait_p99(self) -> float | None:
        """Median workqueue wait p99."""
        return _median([r.queue_wait_p99 for r in self.runs])

    @property
    def errors(self) -> float:
        """Reconcile errors per reconcile, over all runs."""
        reconciles = sum(r.reconciles for r in self.runs)
        return sum(r.reconcile_errors for r in self.runs) / reconciles if reconciles else 0.0

    @property
    def timed_out(self) -> bool:
        """Whether any run ran out of time (its clusters were not all ready)."""
        return any(r.timed_out for r in self.runs)

    @property
    def busy(self) -> float:
        """Mean fraction of the time in which every worker was busy."""
        return statistics.fmean(r.busy_fraction for r in self.runs)

    @property
    def throttle(self) -> float | None:
        """Median client token-bucket wait per request (None: no client limiter)."""
        return _median([r.throttle_wait_mean for r in self.runs])

    @property
    def api(self) -> float | None:
        """Median API latency without throttling."""
        return _median([api_latency(r) for r in self.runs])

    @property
    def reconcile_p50(self) -> float | None:
        """Median reconcile time p50."""
        return _median([r.reconcile_time_p50 for r in self.runs])


def outcomes(results: Sequence[ConcurrencyResult]) -> list[Outcome]:
    """Groups the fixed-value results by concurrency, lowest first (adaptive runs left out)."""
    grouped: dict[int, list[ConcurrencyResult]] = {}
    for r in results:
        if not r.adaptive:
            grouped.setdefault(r.concurrency, []).append(r)
    return [Outcome(c, tuple(runs)) for c, runs in sorted(grouped.items())]


def noise(groups: Sequence[Outcome]) -> tuple[float, str]:
    """Returns the run-to-run noise (a fraction of time to ready) and how it was obtained."""
    spreads = [
        ((max(ts) - min(ts)) / statistics.fmean(ts), o.concurrency)
        for o in groups
        if len(o.runs) > 1 and (ts := [r.seconds_until_all_ready for r in o.runs]) and max(ts) > 0
    ]
    if not spreads:
        return NOISE_ASSUMED, (
            f"run-to-run noise not measured (one run per value; --repeat measures it): "
            f"a {NOISE_ASSUMED:.0%} margin is assumed"
        )
    spread, at = max(spreads)
    runs = {len(o.runs) for o in groups if len(o.runs) > 1}
    margin = max(spread, NOISE_FLOOR)
    return margin, (
        f"run-to-run noise {spread:.0%} of time to ready (the widest spread, at {at}, over "
        f"{'/'.join(str(n) for n in sorted(runs))} runs per value): a {margin:.0%} margin"
    )
