"""The concurrency advice follows issue 7's rule and says why, citing the numbers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rayop.bench.metrics import WorkerSample, busy_fraction
from rayop.bench.recommend import recommend
from rayop.bench.results import ConcurrencyResult


def series(concurrency: int, busy: float, n: int = 100) -> list[WorkerSample]:
    """0.5 s samples in which all workers are busy in a fraction ``busy`` of them."""
    k = round(busy * n)
    return [
        WorkerSample(
            t=i * 0.5,
            active_workers=concurrency if i < k else max(0, concurrency - 1),
            max_workers=concurrency,
            queue_depth=50.0 if i < k else 0.0,
        )
        for i in range(n)
    ]


def measured(
    concurrency: int,
    *,
    busy: float,
    queue_p99: float,
    ready: float,
    api: float = 0.02,
    throttle: float = 0.0,
    errors: int = 0,
    reconciles: int = 200,
) -> ConcurrencyResult:
    samples = series(concurrency, busy)
    return ConcurrencyResult(
        concurrency=concurrency,
        busy_fraction=busy_fraction(samples),
        queue_wait_p99=queue_p99,
        queue_wait_mean=queue_p99 / 3,
        seconds_until_all_ready=ready,
        api_latency_mean=api,
        throttle_wait_mean=throttle,
        reconcile_errors=errors,
        reconciles=reconciles,
        reconcile_errors_per_minute=errors / (ready / 60),
        samples=[(s.t, s.active_workers, s.max_workers, s.queue_depth) for s in samples],
    )


def test_saturated_workers_with_flat_api_latency_raise_until_no_longer_saturated() -> None:
    advice = recommend(
        [
            measured(1, busy=0.97, queue_p99=12.0, ready=120.0),
            measured(2, busy=0.95, queue_p99=6.0, ready=62.0),
            measured(4, busy=0.40, queue_p99=0.5, ready=35.0),
            measured(8, busy=0.05, queue_p99=0.1, ready=34.0),
        ]
    )
    assert (advice.concurrency, advice.action) == (4, "raise")
    assert advice.reasons[0].startswith(
        "at 1: workers busy 97% of the time, queue wait p99 12 s (mean 4.00 s)"
    )
    assert "API latency flat (20 ms -> 20 ms mean)" in advice.reasons[0]
    assert "all ready in 120 s -> 62 s" in advice.reasons[0]
    assert advice.reasons[0].endswith("raise to 2")
    assert advice.reasons[1].endswith("raise to 4")
    assert "at 4: workers busy 40% of the time" in advice.reasons[2]
    assert "not the bottleneck" in advice.reasons[2]
    assert advice.headline == "Raise --reconcile-concurrency to 4."


def test_rising_api_latency_means_do_not_raise() -> None:
    advice = recommend(
        [
            measured(1, busy=0.9, queue_p99=8.0, ready=100.0, api=0.02),
            measured(2, busy=0.9, queue_p99=7.0, ready=80.0, api=0.4),
        ]
    )
    assert (advice.concurrency, advice.action) == (1, "keep")
    (reason,) = advice.reasons
    assert "workers busy 90% of the time, queue wait p99 8.00 s" in reason
    assert "API latency rose from 20 ms to 0.40 s" in reason
    assert "do not raise beyond 1" in reason


def test_rising_client_throttling_means_do_not_raise() -> None:
    advice = recommend(
        [
            measured(2, busy=0.99, queue_p99=20.0, ready=100.0, throttle=0.01),
            measured(4, busy=0.99, queue_p99=15.0, ready=90.0, throttle=0.5),
        ]
    )
    assert (advice.concurrency, advice.action) == (2, "keep")
    assert "client throttling wait rose from 10 ms to 0.50 s per request" in advice.reasons[0]


def test_rising_reconcile_error_rate_means_do_not_raise() -> None:
    advice = recommend(
        [
            measured(1, busy=0.99, queue_p99=20.0, ready=100.0, errors=4),
            measured(2, busy=0.99, queue_p99=10.0, ready=60.0, errors=40),
        ]
    )
    assert advice.concurrency == 1
    assert (
        "reconcile errors rose from 2% to 20% of reconciles (2/min -> 40/min)"
        in (advice.reasons[0])
    )


def test_a_few_routine_conflicts_do_not_veto_a_raise() -> None:
    advice = recommend(
        [
            measured(1, busy=0.98, queue_p99=98.0, ready=31.2, errors=0, reconciles=265),
            measured(8, busy=0.85, queue_p99=9.9, ready=6.7, errors=5, reconciles=220),
        ]
    )
    assert advice.concurrency == 8
    assert "all ready in 31 s -> 6.70 s: raise to 8" in advice.reasons[0]


def test_workers_rarely_busy_means_concurrency_is_not_the_bottleneck() -> None:
    advice = recommend(
        [
            measured(1, busy=0.10, queue_p99=0.05, ready=30.0),
            measured(4, busy=0.0, queue_p99=0.01, ready=29.0),
        ]
    )
    assert (advice.concurrency, advice.action) == (1, "keep")
    assert advice.reasons == (
        "at 1: workers busy 10% of the time, queue wait p99 50 ms (mean 17 ms): "
        "concurrency is not the bottleneck",
    )


def test_busy_workers_without_a_queue_backlog_are_not_a_reason_to_raise() -> None:
    advice = recommend(
        [
            measured(1, busy=0.95, queue_p99=0.2, ready=30.0),
            measured(2, busy=0.5, queue_p99=0.1, ready=20.0),
        ]
    )
    assert advice.concurrency == 1
    assert (
        "queue wait p99 0.20 s (mean 67 ms): concurrency is not the bottleneck" in advice.reasons[0]
    )


def test_a_raise_that_does_not_shorten_time_to_ready_is_not_taken() -> None:
    advice = recommend(
        [
            measured(1, busy=0.9, queue_p99=5.0, ready=60.0),
            measured(2, busy=0.9, queue_p99=5.0, ready=59.0),
        ]
    )
    assert advice.concurrency == 1
    assert (
        "did not shorten the time until all clusters are ready (60 s -> 59 s)" in advice.reasons[0]
    )


def test_still_saturated_at_the_highest_value_asks_for_more_measurements() -> None:
    advice = recommend(
        [
            measured(1, busy=0.99, queue_p99=30.0, ready=300.0),
            measured(2, busy=0.98, queue_p99=15.0, ready=150.0),
        ]
    )
    assert (advice.concurrency, advice.action) == (2, "raise-further")
    assert (
        "at 2: workers busy 98% of the time, queue wait p99 15 s (mean 5.00 s): still saturated"
        in advice.reasons[-1]
    )


def test_a_single_measurement_is_judged_on_saturation_alone() -> None:
    assert recommend([measured(4, busy=0.2, queue_p99=0.1, ready=10.0)]).action == "keep"
    assert recommend([measured(4, busy=0.9, queue_p99=3.0, ready=10.0)]).action == "raise-further"
    with pytest.raises(ValueError, match="no results"):
        recommend([])


def test_api_latency_is_judged_without_the_client_throttling_wait() -> None:
    # Request durations (which include the token-bucket wait) double, but the server's share is
    # flat and the throttling wait grows by less than 50 ms per request: the raise is justified.
    low = replace(
        measured(1, busy=0.97, queue_p99=10.0, ready=17.5, api=0.041, throttle=0.024),
        api_server_latency_mean=0.017,
    )
    high = replace(
        measured(2, busy=0.97, queue_p99=9.0, ready=14.7, api=0.067, throttle=0.049),
        api_server_latency_mean=0.018,
    )
    advice = recommend([low, high])
    assert advice.concurrency == 2
    assert "API latency flat (17 ms -> 18 ms mean)" in advice.reasons[0]
    assert "throttling wait 24 ms -> 49 ms per request" in advice.reasons[0]
