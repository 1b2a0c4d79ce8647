"""The api-slowdown scenario: when the API server slows, how soon auto sheds workers, plotted."""

from __future__ import annotations

import base64

import pytest
from typer.testing import CliRunner

from rayop.advise.evidence import server_latency
from rayop.advise.exposition import Snapshot
from rayop.bench.latency_step import reduction_after
from rayop.bench.metrics import WorkerSample
from rayop.bench.recommend import recommend
from rayop.bench.report import by_concurrency, table_rows
from rayop.bench.report_workers import workers_chart
from rayop.bench.results import ConcurrencyResult
from rayop.cli.commands import loaded_app

app = loaded_app()


def sample(t: float, limit: float) -> WorkerSample:
    return WorkerSample(t=t, active_workers=limit, max_workers=limit, queue_depth=3.0)


def test_the_reduction_is_timed_from_the_last_limit_before_the_slowdown() -> None:
    samples = [sample(0.5 * i, lim) for i, lim in enumerate([1, 2, 4, 8, 8, 8, 6, 6, 4])]
    limit, fell = reduction_after(samples, 1.6)  # 8 at t=1.5; 6 first at t=3.0
    assert limit == 8.0
    assert fell == pytest.approx(1.4)
    assert reduction_after(samples, 4.1) == (4.0, None)  # the last limit, never lower after
    assert reduction_after(samples, -1.0) == (None, None)


def scrape(api_sum: float, api_count: int, throttle_sum: float) -> Snapshot:
    return Snapshot.from_text(
        "# TYPE rest_client_request_duration_seconds histogram\n"
        f'rest_client_request_duration_seconds_bucket{{verb="GET",le="+Inf"}} {api_count}\n'
        f'rest_client_request_duration_seconds_sum{{verb="GET"}} {api_sum}\n'
        f'rest_client_request_duration_seconds_count{{verb="GET"}} {api_count}\n'
        "# TYPE rest_client_rate_limiter_duration_seconds histogram\n"
        f'rest_client_rate_limiter_duration_seconds_bucket{{le="+Inf"}} {api_count}\n'
        f"rest_client_rate_limiter_duration_seconds_sum {throttle_sum}\n"
        f"rest_client_rate_limiter_duration_seconds_count {api_count}\n"
    )


def test_the_sampled_api_latency_excludes_client_throttling() -> None:
    before, after = scrape(1.0, 10, 0.2), scrape(3.0, 20, 1.2)
    assert server_latency(before, after) == pytest.approx((2.0 - 1.0) / 10)
    assert server_latency(after, after) is None  # no request in between


def slowed(concurrency: int, *, adaptive: bool, errors_per_minute: float) -> ConcurrencyResult:
    limits = [min(1 + i // 4, 8) if adaptive else concurrency for i in range(60)]
    if adaptive:
        limits = limits[:40] + [6] * 20
    return ConcurrencyResult(
        concurrency=concurrency,
        adaptive=adaptive,
        scenario="api-slowdown",
        seconds_until_all_ready=30.0,
        reconcile_errors_per_minute=errors_per_minute,
        samples=[(0.5 * i, float(lim), float(lim), 4.0) for i, lim in enumerate(limits)],
        api_latency_samples=[(0.5 * i, 0.005 if i < 36 else 0.105) for i in range(60)],
        api_slowdown_at=18.0,
        workers_at_slowdown=8.0 if adaptive else float(concurrency),
        workers_reduced_after=2.0 if adaptive else None,
    )


def test_the_advice_and_table_say_how_auto_met_the_slowdown() -> None:
    results = [
        slowed(1, adaptive=False, errors_per_minute=0.5),
        slowed(16, adaptive=True, errors_per_minute=0.0),
    ]
    advice = recommend(results)
    assert advice.reasons[-1].endswith(
        "; when the API slowed at 18 s it ran 8 workers and had fewer 2.00 s later; "
        "reconcile errors 0.0/min against 0.5/min at 1"
    ), advice.reasons[-1]
    rows = dict(table_rows(results))
    assert rows["API slowed at (s): workers then, fewer after (s)"] == [
        "18.0: 1, never",
        "18.0: 8, 2.0",
    ]
    assert "API slowed at (s): workers then, fewer after (s)" not in dict(
        table_rows([ConcurrencyResult(concurrency=1)])
    )


def test_the_workers_chart_draws_the_api_latency_panel() -> None:
    results = [
        slowed(1, adaptive=False, errors_per_minute=0.0),
        slowed(16, adaptive=True, errors_per_minute=0.0),
    ]
    png = base64.b64decode(workers_chart(results))
    assert png.startswith(b"\x89PNG")
    without = base64.b64decode(
        workers_chart(
            [
                ConcurrencyResult.from_json({**r.to_json(), "api_latency_samples": []})
                for r in results
            ]
        )
    )
    assert png != without  # the latency lines are drawn


def test_api_slowdown_needs_the_in_process_plane() -> None:
    result = CliRunner().invoke(app, ["bench", "--scenario", "api-slowdown"])
    assert result.exit_code == 2
    assert "needs --in-process" in result.output


def test_the_charts_plot_each_concurrency_once_at_the_median_of_its_runs() -> None:
    runs = [
        ConcurrencyResult(concurrency=c, repeat=i, seconds_until_all_ready=t)
        for i, times in enumerate([(58.0, 29.2, 16.4), (58.4, 29.1, 16.6), (57.4, 28.9, 16.5)])
        for c, t in zip((1, 2, 16), times, strict=True)
    ]
    auto = ConcurrencyResult(concurrency=16, adaptive=True, seconds_until_all_ready=16.5)
    xs, ys = by_concurrency([*runs, auto], lambda r: r.seconds_until_all_ready)
    assert xs == [1, 2, 16]  # once each, in order, the adaptive run left out
    assert ys == [58.0, 29.1, 16.5]
    assert by_concurrency([auto], lambda r: r.seconds_until_all_ready) == ([16], [16.5])
