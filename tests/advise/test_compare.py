"""Before and after a change: keep, revert, or no comparison when the load changed."""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from rayop.advise.compare import PROVISIONED, compare
from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import Scrape
from rayop.advise.exposition import Snapshot
from rayop.advise.identity import Operator
from rayop.advise.offered_load import offered_load
from rayop.advise.window_file import load, save
from rayop.cli.commands import loaded_app
from rayop.runtime.concurrency import rules
from tests.advise.fluid_operator import FluidOperator, Load

app = loaded_app()

MINUTES = 10
CONTROLLERS = ("raycluster",)


def _window(workers: int, load: Load, seconds: int = MINUTES * 60) -> list[Scrape]:
    return FluidOperator(workers=workers).run([load] * seconds, every=15)


def test_a_raise_that_drains_the_queue_is_kept() -> None:
    result = compare(_window(1, Load(arrivals=20)), _window(3, Load(arrivals=20)), CONTROLLERS)
    assert result.verdict == "keep", result.reasons
    assert result.reasons[-1] == "keep: raycluster's queue wait p99 fell beyond the noise"
    assert result.noise_measured
    # One worker was saturated with a growing backlog: its creates were its throughput.
    assert result.reasons[1] == (
        "API creates 600.0/min -> 1200.0/min: the workers were saturated with a backlog before "
        "and it grew slower after, so creates measured their throughput, not the load"
    )


def test_more_creates_without_a_backlog_before_are_a_changed_load() -> None:
    before = _window(4, Load(arrivals=10))
    after = _window(8, Load(arrivals=10, creates_per_pass=2))
    result = compare(before, after, CONTROLLERS)
    assert result.verdict == "incomparable"
    assert result.reasons[0].startswith("API creates 600.0/min before, 1200.0/min after")


def test_a_noisy_queue_wait_does_not_let_a_doubled_load_pass_as_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Measured on rayop (load-change scenario): queue wait p99 swung 89 % between the halves of
    # a window, and the noise-widened tolerance let 3,549 -> 6,999 creates a minute pass.
    monkeypatch.setattr("rayop.advise.compare.noise", lambda windows, controllers: (0.89, True))
    before = _window(4, Load(arrivals=10))
    after = _window(8, Load(arrivals=10, creates_per_pass=2))
    result = compare(before, after, CONTROLLERS)
    assert result.verdict == "incomparable", result.reasons
    assert result.reasons[0] == (
        "API creates 600.0/min before, 1200.0/min after (50% apart, more than the 25% tolerance)"
    )


def test_queue_adds_that_differ_at_the_same_creates_are_not_a_changed_load() -> None:
    # More workers coalesce fewer events: more adds at the same load (KubeRay, measured).
    before = _window(1, Load(arrivals=4, requests_per_pass=4, creates_per_pass=2))
    after = _window(2, Load(arrivals=8, requests_per_pass=2, creates_per_pass=1))
    result = compare(before, after, CONTROLLERS)
    assert result.verdict != "incomparable", result.reasons
    assert "480.0 queue adds/min" in result.reasons[0]


def test_a_raise_with_nothing_to_show_is_reverted_and_a_lower_one_kept() -> None:
    calm = Load(arrivals=10)
    raised = compare(_window(4, calm), _window(8, calm), CONTROLLERS)
    assert raised.verdict == "revert"
    assert raised.reasons[-1] == "revert: no gain beyond the noise to show for the change"
    lowered = compare(_window(8, calm), _window(4, calm), CONTROLLERS)
    assert (lowered.verdict, lowered.reasons[-1]) == ("keep", "keep: as good with fewer workers")


def test_an_api_slowed_by_more_workers_is_reverted() -> None:
    # Twice the workers, each pass twice as slow on a slower API: nothing drained faster.
    before = _window(1, Load(arrivals=20, api_seconds=0.01))
    after = _window(2, Load(arrivals=20, api_seconds=0.2, pass_seconds=0.2))
    result = compare(before, after, CONTROLLERS)
    assert result.verdict == "revert"
    assert result.reasons[-1] == "revert: API latency rose: more workers only added contention"


def test_a_raise_that_drained_the_queue_is_kept_though_the_api_slowed() -> None:
    before = _window(1, Load(arrivals=20, api_seconds=0.01))
    after = _window(3, Load(arrivals=20, api_seconds=0.05))
    result = compare(before, after, CONTROLLERS)
    assert result.verdict == "keep", result.reasons
    assert result.reasons[-1] == (
        "keep: raycluster's queue wait p99 fell beyond the noise "
        "(API latency rose: the API server is the next limit)"
    )


def test_a_changed_load_is_no_comparison() -> None:
    result = compare(_window(1, Load(arrivals=20)), _window(2, Load(arrivals=40)), CONTROLLERS)
    assert result.verdict == "incomparable"
    assert result.reasons[-1] == "the load changed, the comparison does not hold"
    assert result.reasons[0] == (
        "API creates 600.0/min before, 1200.0/min after (50% apart, more than the 10% tolerance)"
    )


def test_a_window_too_thin_to_halve_assumes_the_noise() -> None:
    result = compare(
        _window(1, Load(arrivals=20), seconds=60), _window(3, Load(arrivals=20), 60), CONTROLLERS
    )
    assert (result.noise, result.noise_measured) == (0.10, False)
    assert "noise 10% (assumed)" in result.reasons[0]


def test_a_window_survives_the_file_and_compares_the_same(tmp_path: Path) -> None:
    before = _window(1, Load(arrivals=20))
    path = tmp_path / "before.json"
    save(path, Operator("rayop", CONTROLLERS), "http://op/metrics", before)
    operator, source, loaded = load(path)
    assert (operator.name, source) == ("rayop", "http://op/metrics")
    after = _window(3, Load(arrivals=20))
    assert compare(loaded, after, CONTROLLERS) == compare(before, after, CONTROLLERS)


def test_a_bad_before_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "before.json"
    bad.write_text('{"some": "json"}')
    result = CliRunner().invoke(
        app, ["advise", "--metrics-url", "http://127.0.0.1:1/m", "--before", str(bad)]
    )
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"rayop advise: --before {bad}: not a window saved by rayop advise --save"
    )
    with pytest.raises(AdviseInputError, match="no such file"):
        load(tmp_path / "missing.json")


def test_two_saved_windows_compare_offline_with_before_and_after(tmp_path: Path) -> None:
    before, after = tmp_path / "c1.json", tmp_path / "c2.json"
    save(before, Operator("rayop", CONTROLLERS), "rayop bench", _window(1, Load(arrivals=20)))
    save(after, Operator("rayop", CONTROLLERS), "rayop bench", _window(3, Load(arrivals=20)))
    result = CliRunner().invoke(
        app, ["advise", "--before", str(before), "--after", str(after), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.output)
    expected = compare(load(before)[2], load(after)[2], CONTROLLERS)
    assert doc["comparison"]["verdict"] == expected.verdict == "keep"
    assert [v["controller"] for v in doc["controllers"]] == ["raycluster"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--after", "a.json"], "--after needs --before (the window to compare it with)"),
        (
            ["--after", "a.json", "--before", "b.json", "--metrics-url", "http://x/m"],
            "--after reads a saved window: give it instead of --metrics-url/--prometheus",
        ),
    ],
)
def test_after_is_refused_without_before_or_beside_a_live_read(
    args: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["advise", *args])
    assert result.exit_code == 2
    assert result.output.strip() == f"rayop advise: {message}"


def test_a_bad_after_file_is_named_as_after(tmp_path: Path) -> None:
    good = tmp_path / "c1.json"
    save(good, Operator("rayop", CONTROLLERS), "x", _window(1, Load(arrivals=20), 60))
    result = CliRunner().invoke(
        app, ["advise", "--before", str(good), "--after", str(tmp_path / "missing.json")]
    )
    assert result.exit_code == 2
    assert (
        result.output.strip() == f"rayop advise: --after {tmp_path / 'missing.json'}: no such file"
    )


def test_a_queue_wait_change_below_a_backlog_counts_neither_way() -> None:
    assert not rules.wait_matters(0.099, 0.38) and not rules.wait_matters(None, 0.9)
    assert rules.wait_matters(0.66, 1.0) and rules.wait_matters(2.0, None)


def _provisioned(window: list[Scrape], seconds: float, clusters: int = 10) -> list[Scrape]:
    """The window with ``clusters`` clusters provisioned in ``seconds`` each at its end."""
    extra = {
        (PROVISIONED, frozenset({"name": f"c{i}", "namespace": "ns"}.items())): seconds
        for i in range(clusters)
    }
    last = window[-1]
    return [*window[:-1], Scrape(last.t, Snapshot({**last.snapshot.samples, **extra}))]


def test_a_queue_wait_gain_without_a_ready_gain_is_no_gain() -> None:
    before = _provisioned(_window(1, Load(arrivals=20)), 138.0)
    after = _provisioned(_window(3, Load(arrivals=20)), 135.0)
    result = compare(before, after, CONTROLLERS)
    assert result.verdict == "revert", result.reasons
    assert (
        "queue wait fell but time to ready did not: the wait moved elsewhere (the API server), "
        "no gain"
    ) in result.reasons
    faster = compare(before, _provisioned(_window(3, Load(arrivals=20)), 60.0), CONTROLLERS)
    assert faster.verdict == "keep", faster.reasons


def _burst(workers: int, rate: float, seconds: int = 60) -> list[Scrape]:
    """A whole burst, as `rayop bench` records one: ``rate`` keys a second for ``seconds``, from
    an idle operator, until the scrape after everything was served (10 keys a second a worker)."""
    served_by = max(seconds, math.ceil(rate * seconds / (10 * workers)))
    loads = [Load(arrivals=rate)] * seconds + [Load(arrivals=0)] * (served_by - seconds + 6)
    return FluidOperator(workers=workers).run(loads)


def test_the_same_burst_served_faster_is_the_same_load_and_kept() -> None:
    # 1,200 keys at 20 a second: one worker serves them in 120 s, three in 60 s. The windows end
    # when all is served, so creates a minute measured the workers' pace (the old check refused).
    result = compare(_burst(1, 20), _burst(3, 20), CONTROLLERS)
    assert result.verdict == "keep", result.reasons
    assert (
        "the same load (1200 -> 1200 API creates in all, each window a whole burst"
        in result.reasons[0]
    )
    assert "time to serve the whole burst (to its last create) 120 s -> 60 s (-50%)" in (
        result.reasons
    )
    assert (result.noise, result.noise_measured) == (0.10, False)


def test_a_doubled_burst_is_a_changed_load() -> None:
    # 20 then 40 keys a second for the same minute: twice what the users asked for, though the
    # second window, served by twice the workers, is as long as the first.
    result = compare(_burst(2, 20), _burst(4, 40), CONTROLLERS)
    assert result.verdict == "incomparable", result.reasons
    assert result.reasons == (
        "API creates 1200 in all before, 2400 after, each window a whole burst served (50% "
        "apart, more than the 10% tolerance)",
        "the load changed, the comparison does not hold",
    )


def test_the_saturated_scenario_drained_faster_at_two_workers_is_kept() -> None:
    # The saturated scenario's shape (rayop, measured: 7,200 creates in 221 s at 1 worker and
    # in 142 s at 2): a burst faster than either serves, so both back up and 2 drain sooner.
    before, after = _burst(1, 30), _burst(2, 30)
    assert after[-1].t < before[-1].t * 0.6
    result = compare(before, after, CONTROLLERS)
    assert result.verdict == "keep", result.reasons
    assert result.reasons[-1] == (
        "keep: raycluster's queue wait p99 fell beyond the noise; time to serve the burst fell "
        "beyond the noise"
    )


def test_a_window_that_began_with_a_backlog_is_judged_per_minute() -> None:
    # Cut out of a running load, a window's creates are not all its users asked for.
    model = FluidOperator(workers=1)
    model.run([Load(arrivals=20)] * 30)
    midway = model.run([Load(arrivals=0)] * 60)
    assert not offered_load(midway, CONTROLLERS).whole_burst
    assert offered_load(_burst(1, 20), CONTROLLERS).whole_burst
    result = compare(midway, _burst(1, 20), CONTROLLERS)
    assert result.reasons[0] == (
        "API creates 300.0/min before, 571.4/min after (48% apart, more than the 10% tolerance)"
    )
