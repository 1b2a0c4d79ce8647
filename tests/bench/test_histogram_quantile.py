"""Histogram quantiles from Prometheus buckets, as PromQL's histogram_quantile computes them."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client import Histogram as PromHistogram

from rayop.advise.exposition import Histogram, Snapshot, histogram_quantile

INF = math.inf


def test_interpolates_linearly_inside_the_bucket_holding_the_rank() -> None:
    # 10 observations <= 1, 30 more in (1, 2], none above.
    buckets = [(1.0, 10.0), (2.0, 40.0), (INF, 40.0)]
    assert histogram_quantile(0.25, buckets) == pytest.approx(1.0)  # rank 10: top of bucket 1
    assert histogram_quantile(0.5, buckets) == pytest.approx(1.0 + 10 / 30)  # rank 20
    assert histogram_quantile(1.0, buckets) == pytest.approx(2.0)


def test_first_bucket_starts_at_zero() -> None:
    assert histogram_quantile(0.5, [(0.1, 4.0), (INF, 4.0)]) == pytest.approx(0.05)


def test_rank_in_the_inf_bucket_returns_the_highest_finite_bound() -> None:
    assert histogram_quantile(0.99, [(1.0, 50.0), (10.0, 90.0), (INF, 100.0)]) == 10.0


def test_empty_histogram_has_no_quantile() -> None:
    assert histogram_quantile(0.5, [(1.0, 0.0), (INF, 0.0)]) is None
    assert histogram_quantile(0.5, []) is None


def test_quantile_outside_unit_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match="outside"):
        histogram_quantile(1.5, [(1.0, 1.0), (INF, 1.0)])


def test_snapshot_histograms_subtract_to_isolate_a_phase() -> None:
    registry = CollectorRegistry()
    h = PromHistogram(
        "wait_seconds", "w", ["controller"], buckets=(0.1, 1.0, 10.0), registry=registry
    )
    for _ in range(100):
        h.labels(controller="a").observe(0.05)  # before the measured phase
    before = Snapshot.from_registry(registry)
    for _ in range(10):
        h.labels(controller="a").observe(5.0)
    h.labels(controller="b").observe(0.05)  # another controller: filtered out
    delta = Snapshot.from_registry(registry).histogram(
        "wait_seconds", controller="a"
    ) - before.histogram("wait_seconds", controller="a")
    assert delta.count == 10
    assert delta.mean == pytest.approx(5.0)
    assert delta.quantile(0.5) == pytest.approx(1.0 + 9.0 * 0.5)  # all 10 in (1, 10]


def test_text_and_registry_snapshots_agree() -> None:
    registry = CollectorRegistry()
    h = PromHistogram("x_seconds", "x", buckets=(0.5, 2.0), registry=registry)
    for v in (0.1, 0.4, 1.0, 3.0):
        h.observe(v)
    from prometheus_client.exposition import generate_latest

    text = Snapshot.from_text(generate_latest(registry).decode()).histogram("x_seconds")
    direct = Snapshot.from_registry(registry).histogram("x_seconds")
    assert text.buckets == direct.buckets
    assert text.quantile(0.5) == direct.quantile(0.5) == pytest.approx(0.5)


def test_a_known_upper_limit_caps_the_estimate_of_coarse_buckets() -> None:
    # Waits of 11-17 s all land in (10, 100]: interpolation alone says p99 ~ 99 s.
    h = Histogram(buckets=((1.0, 0.0), (10.0, 0.0), (100.0, 100.0), (INF, 100.0)), count=100)
    assert h.quantile(0.99) == pytest.approx(99.1)
    assert h.quantile(0.99, upper=18.0) == 18.0
    assert h.quantile(0.05, upper=18.0) == pytest.approx(14.5)
