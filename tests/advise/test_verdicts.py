"""The verdict on windows with a known right answer, read from rayop's own metric series."""

from __future__ import annotations

import pytest

from rayop.advise.advice import Advice, advise
from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import Scrape
from rayop.advise.identity import identify
from tests.advise.fluid_operator import FluidOperator, Load
from tests.advise.scenarios import SCENARIOS, Scenario

SECONDS = 60


def _advice(op: FluidOperator, loads: list[Load]) -> Advice:
    window = op.run(loads)
    return advise(identify(window[0].snapshot, source="model"), "model", window)


def test_saturated_with_a_backlog_and_a_calm_api_raises_to_what_the_arrivals_need() -> None:
    # 20 keys/s at 0.1 s a pass need 2.5 workers at 80 % busy: one worker serves 10/s.
    advice = _advice(FluidOperator(workers=1), [Load(arrivals=20)] * SECONDS)
    (v,) = advice.verdicts
    assert (v.action, v.to, v.next_limit) == ("raise", 2, "concurrency")
    assert "saturated with a backlog and a calm API" in v.reasons[1]


def test_a_raise_is_at_most_a_doubling_and_at_least_one_more() -> None:
    advice = _advice(FluidOperator(workers=2), [Load(arrivals=200)] * SECONDS)
    assert advice.verdicts[0].to == 4
    advice = _advice(FluidOperator(workers=4), [Load(arrivals=41, pass_seconds=0.1)] * SECONDS)
    assert advice.verdicts[0].to == 6  # 41 x 0.1 / 0.8 = 5.1


def test_enough_workers_keep() -> None:
    advice = _advice(FluidOperator(workers=4), [Load(arrivals=20)] * SECONDS)
    (v,) = advice.verdicts
    assert (v.action, v.to, v.next_limit) == ("keep", None, None)
    assert "not the bottleneck" in v.reasons[1]


def test_an_api_slowing_during_the_window_is_no_reason_to_raise() -> None:
    loads = [Load(arrivals=20, api_seconds=0.01)] * 30 + [Load(arrivals=20, api_seconds=0.2)] * 30
    (v,) = _advice(FluidOperator(workers=1), loads).verdicts
    assert (v.action, v.next_limit) == ("keep", "api-server")
    (v,) = _advice(
        FluidOperator(workers=4),
        [Load(arrivals=80)] * 30 + [Load(arrivals=80, api_seconds=0.2)] * 30,
    ).verdicts
    assert (v.action, v.to, v.next_limit) == ("lower", 2, "api-server")


def test_client_throttling_names_qps_first() -> None:
    loads = [Load(arrivals=20, throttle_seconds=0.2)] * SECONDS
    (v,) = _advice(FluidOperator(workers=1), loads).verdicts
    assert (v.action, v.next_limit) == ("keep", "qps")
    assert "raise --qps and --burst first" in v.reasons[1]


def test_an_idle_fleet_keeps_and_an_idle_operator_cannot_tell() -> None:
    (v,) = _advice(FluidOperator(workers=1), [Load(arrivals=0.5)] * SECONDS).verdicts
    assert (v.action, v.next_limit) == ("keep", None)
    (v,) = _advice(FluidOperator(workers=1), [Load(arrivals=0)] * SECONDS).verdicts
    assert v.action == "cannot-tell"
    assert "only 0 reconciles in 60 s" in v.reasons[0]


def test_high_errors_hold_a_raise() -> None:
    (v,) = _advice(
        FluidOperator(workers=1), [Load(arrivals=20, error_share=0.3)] * SECONDS
    ).verdicts
    assert (v.action, v.next_limit) == ("keep", "errors")


def test_a_counter_reset_in_the_window_cannot_tell() -> None:
    before = FluidOperator(workers=1).run([Load(arrivals=20)] * 30)
    after = FluidOperator(workers=1).run([Load(arrivals=20)] * 10)
    window = before + [Scrape(30.0 + s.t + 1, s.snapshot) for s in after]
    advice = advise(identify(window[0].snapshot, source="model"), "model", window)
    (v,) = advice.verdicts
    assert v.action == "cannot-tell"
    assert "fell during the window: the operator restarted" in v.reasons[0]


def test_too_few_scrapes_cannot_tell() -> None:
    op = FluidOperator(workers=1)
    window = op.run([Load(arrivals=20)] * 2, every=2)
    (v,) = advise(identify(window[0].snapshot, source="m"), "m", window).verdicts
    assert (v.action, v.reasons) == ("cannot-tell", ("only 2 scrapes: widen --window",))


def test_kuberay_is_read_the_same_way_and_named() -> None:
    advice = _advice(FluidOperator(workers=1, flavour="KubeRay"), [Load(arrivals=20)] * SECONDS)
    assert advice.operator.name == "KubeRay"
    assert advice.verdicts[0].action == "raise"


def test_metrics_of_an_unknown_operator_are_refused() -> None:
    op = FluidOperator(workers=1, name="widgets")
    with pytest.raises(AdviseInputError, match="unknown operator: its controllers are widgets"):
        identify(op.run([Load(arrivals=1)] * 2)[0].snapshot, source="http://x/metrics")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_rules_scenarios_get_their_verdict(scenario: Scenario) -> None:
    op = FluidOperator(workers=scenario.workers)
    window = op.run(list(scenario.loads), every=15)
    (v,) = advise(identify(window[0].snapshot, source="model"), "model", window).verdicts
    assert (v.action, v.next_limit) == (scenario.verdict, scenario.next_limit), v.reasons


def test_a_cpu_bound_rayop_keeps_and_a_kuberay_of_unknown_cores_is_not_judged_on_cpu() -> None:
    busy_cpu = [Load(arrivals=20, cpu_seconds=0.95)] * SECONDS
    (v,) = _advice(FluidOperator(workers=1), busy_cpu).verdicts
    assert (v.action, v.next_limit) == ("keep", "cpu")
    assert "used 0.95 of the 1 core(s)" in v.reasons[1]
    (v,) = _advice(FluidOperator(workers=1, flavour="KubeRay"), busy_cpu).verdicts
    assert (v.action, v.next_limit) == ("raise", "concurrency")
    (v,) = _advice(FluidOperator(workers=1), [Load(arrivals=20, cpu_seconds=0.5)] * 60).verdicts
    assert v.action == "raise"
