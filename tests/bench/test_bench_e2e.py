"""One small ``rayop bench`` run end to end: every figure per concurrency value, no duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rayop.advise.window_file import load
from rayop.bench.results import ConcurrencyResult
from rayop.cli.commands import loaded_app

app = loaded_app()

FIGURES = set(ConcurrencyResult.__dataclass_fields__)


@pytest.mark.slow
def test_small_bench_reports_every_figure_per_concurrency_and_no_duplicate_pods(
    tmp_path: Path,
) -> None:
    out, html = tmp_path / "bench.json", tmp_path / "bench.html"
    args = (
        "bench --clusters 3 --workers 2 --concurrency 1,2 --pod-start-delay 0.2 --in-process "
        f"--timeout 60 --json {out} --report {html} --advise-windows {tmp_path / 'windows'}"
    )
    result = CliRunner().invoke(app, args.split())
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    results = doc["results"]
    assert [r["concurrency"] for r in results] == [1, 2]
    for r in results:
        assert set(r) == FIGURES
        assert not r["timed_out"]
        assert r["duplicate_pod_creates"] == 0
        assert r["pod_creates"] == r["expected_pod_creates"] == 3 * (2 + 1)
        assert r["ready_latency"]["count"] == 3
        assert 0 < r["ready_latency"]["p50"] <= r["ready_latency"]["max"]
        assert r["seconds_until_all_ready"] >= r["ready_latency"]["max"] - 0.5
        assert r["reconciles"] > 0 and r["queue_wait_p99"] is not None
        assert r["api_requests_by_verb"]["create"] >= 9
        assert r["operator_cpu_seconds"] > 0 and r["operator_peak_rss_mb"] > 0
        assert r["samples"], "the operator's gauges were sampled"
        # Every event is accounted for: written (a create or a series patch) or counted unsent.
        assert r["events_recorded"] > 0 and r["event_writes_by_verb"]["create"] > 0
        unsent = r["events_unsent_by_reason"]
        assert set(unsent) == {
            "aggregated",
            "queue_full",
            "rejected",
            "retries_exhausted",
            "shutdown",
        }
        assert unsent["queue_full"] == unsent["rejected"] == unsent["retries_exhausted"] == 0
        writes = sum(r["event_writes_by_verb"].values())
        assert writes + unsent["aggregated"] >= r["events_recorded"]
    advice = doc["recommendation"]
    assert advice["concurrency"] in (1, 2) and advice["reasons"]
    assert "2 against 1: all ready" in advice["text"]
    for value in (1, 2):  # each run's measured phase, as `rayop advise --save` writes it
        operator, source, scrapes = load(tmp_path / "windows" / f"c{value}.json")
        assert (operator.name, source) == ("rayop", "rayop bench") and scrapes
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 2
    assert "concurrency 2" in page
    assert "Keep --reconcile-concurrency" in result.output or "Raise" in result.output
