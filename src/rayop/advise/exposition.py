"""Reads a Prometheus text exposition: snapshots of every sample, and histogram quantiles.

A :class:`Snapshot` is every sample of a scrape (from an in-process ``CollectorRegistry`` or a
``/metrics`` text page), keyed by name and labels. Histograms are read from their cumulative
``_bucket`` samples and can be subtracted (after minus before) to isolate one phase.
Quantiles follow PromQL's ``histogram_quantile``
(https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile): linear
interpolation inside the bucket that holds the rank, the lower bound of the first bucket taken as
0, and the highest finite bound returned when the rank falls in the +Inf bucket.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Histogram", "Labels", "Snapshot", "histogram_quantile"]

Labels = frozenset[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every sample of one scrape: ``(name, labels) -> value``."""

    samples: Mapping[tuple[str, Labels], float] = field(default_factory=dict)

    @classmethod
    def from_registry(cls, registry: CollectorRegistry) -> Snapshot:
        """Collects ``registry`` now (never blocks on I/O)."""
        out: dict[tuple[str, Labels], float] = {}
        for family in registry.collect():
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = float(s.value)
        return cls(out)

    @classmethod
    def from_text(cls, text: str) -> Snapshot:
        """Parses a Prometheus text exposition (a ``/metrics`` page)."""
        out: dict[tuple[str, Labels], float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = float(s.value)
        return cls(out)

    def select(self, metric: str, /, **match: str) -> Iterable[tuple[dict[str, str], float]]:
        """Yields ``(labels, value)`` of the samples named ``metric`` whose labels include ``match``."""
        for (n, labels), value in self.samples.items():
            if n != metric:
                continue
            as_dict = dict(labels)
            if all(as_dict.get(k) == v for k, v in match.items()):
                yield as_dict, value

    def total(self, metric: str, /, **match: str) -> float:
        """Returns the sum of the matching samples (0 when there are none)."""
        return sum(v for _, v in self.select(metric, **match))

    def by_label(self, metric: str, /, label: str, **match: str) -> dict[str, float]:
        """Returns the matching samples summed per value of ``label``."""
        out: dict[str, float] = {}
        for labels, value in self.select(metric, **match):
            key = labels.get(label, "")
            out[key] = out.get(key, 0.0) + value
        return out

    def histogram(self, metric: str, /, **match: str) -> Histogram:
        """Returns histogram ``metric`` (all matching series merged bucket by bucket)."""
        buckets: dict[float, float] = {}
        for labels, value in self.select(f"{metric}_bucket", **match):
            bound = float(labels["le"])
            buckets[bound] = buckets.get(bound, 0.0) + value
        return Histogram(
            buckets=tuple(sorted(buckets.items())),
            count=self.total(f"{metric}_count", **match),
            sum=self.total(f"{metric}_sum", **match),
        )


@dataclass(frozen=True, slots=True)
class Histogram:
    """A cumulative histogram: ``(upper bound, count of observations <= bound)`` ascending."""

    buckets: tuple[tuple[float, float], ...] = ()
    count: float = 0.0
    sum: float = 0.0

    def __sub__(self, earlier: Histogram) -> Histogram:
        """Returns the observations made between ``earlier`` and this snapshot."""
        before = dict(earlier.buckets)
        return Histogram(
            buckets=tuple((b, c - before.get(b, 0.0)) for b, c in self.buckets),
            count=self.count - earlier.count,
            sum=self.sum - earlier.sum,
        )

    def quantile(self, q: float, *, upper: float | None = None) -> float | None:
        """Returns the ``q`` quantile (None when empty); see :func:`histogram_quantile`.

        Args:
            q: The quantile.
            upper: The largest value any observation can have (say, how long the process has
                run, for a queue wait); the estimate is capped there. Buckets growing tenfold
                otherwise put a p99 anywhere between 10 and 100 s for waits just over 10 s.
        """
        value = histogram_quantile(q, self.buckets)
        if value is None or upper is None:
            return value
        return min(value, upper)

    @property
    def mean(self) -> float | None:
        """The mean observation (None when empty)."""
        return self.sum / self.count if self.count else None


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """Estimates the ``q`` quantile from cumulative buckets as PromQL does.

    Args:
        q: The quantile, 0 <= q <= 1.
        buckets: ``(upper bound, cumulative count)`` pairs; +Inf should be the last bound.

    Returns:
        The estimate, or None when there are no observations.

    Raises:
        ValueError: ``q`` is outside [0, 1].
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside [0, 1]")
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    total = ordered[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank and count > lower_count:
            if math.isinf(bound):
                return lower_bound
            if bound <= 0:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return lower_bound
