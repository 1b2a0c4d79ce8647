"""``rayop bench --concurrency 1,auto``: the adaptive run beside a fixed one, repeated, reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rayop.bench.latency_step import LatencyStep
from rayop.cli.bench import parse_concurrency
from rayop.cli.commands import loaded_app

app = loaded_app()


def test_concurrency_lists_take_auto_beside_fixed_values() -> None:
    assert parse_concurrency("4, 1,auto,4") == ((1, 4), True)
    assert parse_concurrency("2") == ((2,), False)
    with pytest.raises(typer.BadParameter, match="needs fixed values"):
        parse_concurrency("auto")
    with pytest.raises(typer.BadParameter, match="integers like"):
        parse_concurrency("1,fast")


@pytest.mark.slow
def test_an_adaptive_run_is_measured_beside_the_fixed_ones_and_plotted(tmp_path: Path) -> None:
    out, html = tmp_path / "bench.json", tmp_path / "bench.html"
    args = (
        "bench --clusters 3 --workers 2 --concurrency 1,auto --max-reconcile-concurrency 4 "
        f"--repeat 2 --pod-start-delay 0.2 --in-process --timeout 60 --json {out} --report {html}"
    )
    result = CliRunner().invoke(app, args.split())
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    runs = [(r["concurrency"], r["adaptive"], r["repeat"]) for r in doc["results"]]
    assert runs == [(1, False, 0), (4, True, 0), (1, False, 1), (4, True, 1)]
    for r in doc["results"]:
        assert not r["timed_out"] and r["duplicate_pod_creates"] == 0
        limits = {s[2] for s in r["samples"]}
        assert limits <= ({1.0, 2.0, 3.0, 4.0} if r["adaptive"] else {1.0}), limits
    advice = doc["recommendation"]
    assert advice["concurrency"] == 1
    assert advice["reasons"][0].startswith("run-to-run noise ")
    assert "over 2 runs per value" in advice["reasons"][0]
    assert sum(1 for r in advice["reasons"] if r.startswith("auto<=4 ran ")) == 2
    assert doc["settings"]["concurrency"] == [1, "auto"]
    page = html.read_text()
    assert page.count("data:image/png;base64,") == 3
    assert "concurrency auto&lt;=4" in page


def test_a_latency_step_parses_and_needs_the_in_process_plane() -> None:
    step = LatencyStep.parse("20=0.25")
    assert (step.after, step.latency) == (20.0, 0.25)
    assert step.note == "API latency raised to 0.25 s at 20 s into the measured phase"
    for bad in ("20", "a=1", "-1=0.2", "5=-1"):
        with pytest.raises(ValueError, match="AFTER=SECONDS"):
            LatencyStep.parse(bad)
    result = CliRunner().invoke(app, ["bench", "--api-latency-step", "5=0.1"])
    assert result.exit_code == 2
    assert "needs --in-process" in result.output


@pytest.mark.slow
def test_the_latency_step_slows_the_in_process_plane_mid_run(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    args = (
        "bench --clusters 20 --workers 2 --concurrency 1,auto --max-reconcile-concurrency 4 "
        "--pod-start-delay 0.5 --in-process --api-latency-step 0=0.05 --timeout 120 "
        f"--json {out}"
    )
    result = CliRunner().invoke(app, args.split())
    assert result.exit_code == 0, result.output
    for r in json.loads(out.read_text())["results"]:
        assert "API latency raised to 0.05 s at 0 s into the measured phase" in r["notes"]
        assert r["api_server_latency_mean"] > 0.03
