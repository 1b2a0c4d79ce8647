"""benchmarks/small_behind_big.py: which RayJobs get a faulty dashboard, and how a head is told."""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from rayop.sim.dashboard.registry import DELAY_ANNOTATION

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("small_behind_big")


def test_one_in_five_dashboards_is_faulty_half_slow_half_hanging(bench: ModuleType) -> None:
    kinds = Counter(bench.dashboard_kind(i, 5) for i in range(200))
    assert kinds == {"healthy": 160, "slow": 20, "hanging": 20}
    assert {bench.dashboard_kind(i, 0) for i in range(10)} == {"healthy"}


def test_a_faulty_jobs_head_template_carries_the_delay_and_a_healthy_one_none(
    bench: ModuleType,
) -> None:
    slow = bench.rayjob("job-0004", 20, 1.5)
    head = slow["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    assert head["metadata"]["annotations"] == {DELAY_ANNOTATION: "1.5"}
    assert slow["spec"]["entrypoint"] == "sleep 20"
    assert slow["spec"]["submissionMode"] == "HTTPMode"
    healthy = bench.rayjob("job-0000", 20, None)
    assert (
        "annotations"
        not in healthy["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["metadata"]
    )
