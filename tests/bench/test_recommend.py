"""The concurrency advice follows the measured outcome; symptoms explain it and name the next limit.

Recorded results pin the rule, the table of issue 19 among them (1000 x 3, c=1 vs c=8).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rayop.bench.recommend import recommend
from rayop.bench.results import ConcurrencyResult, LatencyStats


def measured(
    concurrency: int,
    *,
    ready: float,
    queue_p99: float,
    busy: float = 0.95,
    api: float = 0.02,
    throttle: float | None = 0.0,
    errors: int = 0,
    reconciles: int = 200,
    repeat: int = 0,
) -> ConcurrencyResult:
    return ConcurrencyResult(
        concurrency=concurrency,
        repeat=repeat,
        seconds_until_all_ready=ready,
        queue_wait_p99=queue_p99,
        queue_wait_mean=queue_p99 / 3,
        busy_fraction=busy,
        api_server_latency_mean=api,
        api_latency_mean=api + (throttle or 0.0),
        throttle_wait_mean=throttle,
        reconcile_errors=errors,
        reconciles=reconciles,
        reconcile_time_p50=0.05,
    )


def issue_table() -> list[ConcurrencyResult]:
    """`rayop bench --clusters 1000 --workers 3 --concurrency 1,8`, as issue 19 reports it."""
    c1 = replace(
        measured(1, ready=119.8, queue_p99=98.8, busy=0.98, throttle=0.021, reconciles=3400),
        ready_latency=LatencyStats(count=1000, p50=108.3),
    )
    c8 = replace(
        measured(8, ready=76.1, queue_p99=76.6, busy=0.9, api=0.024, throttle=0.119),
        reconciles=3300,
        ready_latency=LatencyStats(count=1000, p50=69.0),
    )
    return [c1, c8]


def test_the_issue_table_recommends_8_and_names_qps_as_the_next_limit() -> None:
    advice = recommend(issue_table(), qps=100, burst=200)
    assert (advice.concurrency, advice.action, advice.next_limit) == (8, "raise", "qps")
    assert advice.headline == "Raise --reconcile-concurrency to 8."
    noise, verdict, symptom = advice.reasons
    assert noise.startswith("run-to-run noise not measured (one run per value")
    assert "a 10% margin is assumed" in noise
    assert verdict == (
        "8 against 1: all ready 120 s -> 76 s (-36%), queue wait p99 99 s -> 77 s (-22%), "
        "reconcile errors 0% -> 0%: better by more than the 10% noise, 8 is better"
    )
    assert symptom == (
        "client throttling wait per request grew from 21 ms at 1 to 0.12 s at 8: the client "
        "token bucket is the next limit, raise --qps and --burst (now --qps 100 --burst 200)"
    )


def test_a_gain_within_the_noise_keeps_the_lower_value() -> None:
    advice = recommend(
        [measured(1, ready=60.0, queue_p99=5.0), measured(2, ready=57.0, queue_p99=4.8)]
    )
    assert (advice.concurrency, advice.action) == (1, "keep")
    assert "2 against 1: all ready 60 s -> 57 s (-5%)" in advice.reasons[1]
    assert advice.reasons[1].endswith("within the 10% noise, stay at 1")


def test_the_noise_is_measured_from_repeated_runs() -> None:
    runs = [
        measured(1, ready=100.0, queue_p99=50.0),
        measured(1, ready=120.0, queue_p99=50.0, repeat=1),
        measured(2, ready=95.0, queue_p99=48.0),
        measured(2, ready=97.0, queue_p99=48.0, repeat=1),
    ]
    advice = recommend(runs)
    assert advice.reasons[0] == (
        "run-to-run noise 18% of time to ready (the widest spread, at 1, over 2 runs per value): "
        "a 18% margin"
    )
    assert advice.concurrency == 1  # 110 s -> 96 s is 13 %: inside the noise
    assert advice.margin == pytest.approx(20 / 110)
    quieter = [
        *runs[:2],
        measured(2, ready=80.0, queue_p99=40.0),
        measured(2, ready=82.0, queue_p99=40.0, repeat=1),
    ]
    assert recommend(quieter).concurrency == 2


def test_a_rising_error_share_vetoes_a_faster_value() -> None:
    advice = recommend(
        [
            measured(1, ready=100.0, queue_p99=20.0, errors=4),
            measured(2, ready=60.0, queue_p99=10.0, errors=40),
        ]
    )
    assert advice.concurrency == 1
    assert "reconcile errors 2% -> 20%: the error share rose, stay at 1" in advice.reasons[1]


def test_a_few_routine_conflicts_do_not_veto_a_raise() -> None:
    advice = recommend(
        [
            measured(1, ready=31.2, queue_p99=98.0, reconciles=265),
            measured(8, ready=6.7, queue_p99=9.9, busy=0.5, errors=5, reconciles=220),
        ]
    )
    assert (advice.concurrency, advice.action, advice.next_limit) == (8, "raise", None)
    assert advice.reasons[-1] == (
        "at 8: workers were all busy 50% of the time, queue wait p99 9.90 s, reconcile time p50 "
        "50 ms: concurrency is no longer the bottleneck"
    )


def test_runs_that_lost_events_are_not_ranked() -> None:
    c1, c8 = issue_table()
    lossy = replace(c8, events_unsent_by_reason={"aggregated": 30, "queue_full": 120})
    advice = recommend([c1, lossy])
    assert advice.action == "unranked"
    assert advice.headline == "No recommendation: the runs did not do the same work."
    assert advice.reasons[0] == "at 8 (run 1) 120 events were lost (queue_full 120)"
    assert "not ranked" in advice.reasons[1]
    aggregated_only = replace(c8, events_unsent_by_reason={"aggregated": 30, "queue_full": 0})
    assert recommend([c1, aggregated_only]).action == "raise"


def test_rising_api_latency_explains_but_does_not_overrule_a_faster_value() -> None:
    advice = recommend(
        [
            measured(1, ready=100.0, queue_p99=8.0, api=0.02),
            measured(4, ready=70.0, queue_p99=6.0, api=0.4),
        ]
    )
    assert (advice.concurrency, advice.next_limit) == (4, "api-server")
    assert advice.reasons[-1].startswith(
        "API latency without throttling grew from 20 ms at 1 to 0.40 s at 4: the API server's "
        "capacity is the next limit"
    )


def test_throttling_that_grows_above_the_choice_names_qps() -> None:
    advice = recommend(
        [
            measured(2, ready=100.0, queue_p99=20.0, throttle=0.01),
            measured(4, ready=98.0, queue_p99=19.0, throttle=0.5),
        ]
    )
    assert (advice.concurrency, advice.action, advice.next_limit) == (2, "keep", "qps")
    assert "grew from 10 ms at 2 to 0.50 s at 4" in advice.reasons[-1]


def test_still_saturated_at_the_highest_value_asks_for_more_measurements() -> None:
    advice = recommend(
        [
            measured(1, ready=300.0, queue_p99=30.0, busy=0.99),
            measured(2, ready=150.0, queue_p99=15.0, busy=0.98),
        ]
    )
    assert (advice.concurrency, advice.action, advice.next_limit) == (
        2,
        "raise-further",
        "concurrency",
    )
    assert advice.reasons[-1] == (
        "at 2: workers were all busy 98% of the time, queue wait p99 15 s, reconcile time p50 "
        "50 ms: still saturated at the highest value tested, measure higher values"
    )


def test_slower_time_to_ready_or_a_timeout_is_not_taken() -> None:
    slower = recommend(
        [measured(1, ready=60.0, queue_p99=10.0), measured(2, ready=70.0, queue_p99=2.0)]
    )
    assert slower.concurrency == 1
    assert "time to ready got worse by more than the 10% noise" in slower.reasons[1]
    timed_out = replace(measured(2, ready=30.0, queue_p99=2.0), timed_out=True)
    advice = recommend([measured(1, ready=60.0, queue_p99=10.0), timed_out])
    assert advice.concurrency == 1
    assert "but at 2 a run timed out: stay at 1" in advice.reasons[1]


def test_an_adaptive_run_is_compared_with_the_best_fixed_value() -> None:
    auto = replace(
        measured(16, ready=80.0, queue_p99=70.0),
        adaptive=True,
        samples=[(0.5 * i, 1.0, float(min(1 + i // 4, 6)), 10.0) for i in range(40)],
    )
    advice = recommend([*issue_table(), auto])
    assert advice.concurrency == 8
    assert advice.reasons[-1] == (
        "auto<=16 ran 1 to 6 workers and reached all ready in 80 s, 1.05x the best fixed value "
        "(8, 76 s) and 0.67x the lowest (1, 120 s)"
    )
    (verdict,) = advice.adaptive
    assert verdict.to_json() == {
        "label": "auto<=16",
        "runs": 1,
        "seconds_until_all_ready": 80.0,
        "timed_out": False,
        "best_fixed": 8,
        "best_fixed_seconds": 76.1,
        "lowest_fixed": 1,
        "lowest_fixed_seconds": 119.8,
        "vs_best_fixed": 1.051,
        "vs_lowest_fixed": 0.668,
    }


def test_repeated_adaptive_runs_are_judged_by_their_median() -> None:
    runs = [
        measured(1, ready=40.0, queue_p99=30.0),
        measured(1, ready=42.0, queue_p99=30.0, repeat=1),
        measured(4, ready=20.0, queue_p99=10.0),
        measured(4, ready=22.0, queue_p99=10.0, repeat=1),
        *(
            replace(measured(16, ready=t, queue_p99=9.0, repeat=i), adaptive=True)
            for i, t in enumerate([21.0, 30.0, 23.0])
        ),
    ]
    advice = recommend(runs)
    (verdict,) = advice.adaptive
    assert (verdict.runs, verdict.ready, verdict.best_concurrency) == (3, 23.0, 4)
    assert verdict.vs_best == pytest.approx(23 / 21)
    assert verdict.vs_lowest == pytest.approx(23 / 41)
    assert advice.reasons[-1] == (
        "auto<=16 over 3 runs: median all ready 23 s, 1.10x the best fixed value (4) and 0.56x "
        "the lowest (1)"
    )


def test_without_a_fixed_value_there_is_nothing_to_recommend() -> None:
    with pytest.raises(ValueError, match="no results"):
        recommend([])
    with pytest.raises(ValueError, match="no results"):
        recommend([replace(measured(16, ready=1.0, queue_p99=0.1), adaptive=True)])
    single = recommend([measured(4, ready=10.0, queue_p99=0.1, busy=0.2)])
    assert (single.concurrency, single.action, single.next_limit) == (4, "keep", None)


def test_a_queue_wait_gain_below_a_backlog_is_noise_not_a_reason_to_raise() -> None:
    # An idle KubeRay, measured on a busy machine: no backlog at either value.
    idle = [
        measured(1, ready=60.07, queue_p99=0.85, busy=0.05),
        measured(2, ready=60.53, queue_p99=0.66, busy=0.02),
    ]
    assert recommend(idle, qps=100, burst=200).concurrency == 1
    backlog = [
        measured(1, ready=60.07, queue_p99=1.6, busy=0.9),
        measured(2, ready=50.2, queue_p99=0.66, busy=0.4),
    ]
    assert recommend(backlog, qps=100, burst=200).concurrency == 2


def test_a_queue_wait_gain_without_a_ready_gain_moved_the_wait_elsewhere() -> None:
    # rayop at an API server at its capacity (api-slowdown, 1 service slot): the queue wait
    # p99 fell with 2 workers, the time to all ready did not.
    at_capacity = [
        measured(1, ready=137.8, queue_p99=138.4, busy=0.99),
        measured(2, ready=135.2, queue_p99=97.0, busy=0.99),
    ]
    advice = recommend(at_capacity, qps=100, burst=200)
    assert advice.concurrency == 1
    assert any("the wait moved elsewhere" in reason for reason in advice.reasons)
