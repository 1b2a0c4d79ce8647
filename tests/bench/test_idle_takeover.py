"""benchmarks/idle_takeover.py's table: one column per window, a takeover's warm-up, the CPU per
pass and the requests by method."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def takeover(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("idle_takeover")


def _idle(cpu: float, passes: float, **methods: float) -> dict[str, float | None]:
    return {
        "seconds": 600.0,
        "cpu_seconds": cpu,
        "core_percent": 100.0 * cpu / 600.0,
        "cpu_ms_per_cluster_per_minute": 1000.0 * cpu / 100 / 10,
        "requests": sum(methods.values()),
        "reconcile raycluster (idle)": passes,
        **{f"{m} (idle)": n for m, n in methods.items()},
        "rss_mb": 70.0,
        "apiserver_cpu_seconds": 1.5,
        "cpu_ms_per_pass": 1000.0 * cpu / passes if passes else None,
    }


def test_the_table_has_a_column_per_window_and_only_a_takeover_has_a_warm_up(
    takeover: ModuleType,
) -> None:
    entries = [
        {"operator": "rayop", "role": "created", "idle": _idle(1.0, 200.0, PATCH=100.0)},
        {
            "operator": "kuberay",
            "role": "took over",
            "idle": _idle(540.0, 6000.0, PUT=3.0),
            "warm_up": {"seconds": 900.0, "cpu_seconds": 800.0, "passes": 100.0},
        },
    ]
    lines = takeover.table(entries).splitlines()
    assert lines[0] == "| figure | rayop (created) | kuberay (took over) |"
    cells = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines[2:]}
    assert cells["warm-up (s)"] == ["-", "900 |"]
    assert cells["idle CPU per pass (ms)"] == ["5", "90 |"]
    # each operator's methods, and "-" where an operator sent none of a method
    assert cells["idle PATCH"] == ["100", "- |"]
    assert cells["idle PUT"] == ["-", "3 |"]
    assert "idle reconcile raycluster" not in cells, "passes are not a request method"


def test_the_fleet_is_spread_round_robin_and_every_name_is_unique(takeover: ModuleType) -> None:
    fleet = takeover.spread(10, 4)
    assert fleet[:5] == [
        ("idle-takeover-0", "rc-0"),
        ("idle-takeover-1", "rc-1"),
        ("idle-takeover-2", "rc-2"),
        ("idle-takeover-3", "rc-3"),
        ("idle-takeover-0", "rc-4"),
    ]
    assert len(set(fleet)) == 10
    by_namespace = [sum(ns == f"idle-takeover-{k}" for ns, _ in fleet) for k in range(4)]
    assert by_namespace == [3, 3, 2, 2]
    assert {ns for ns, _ in takeover.spread(5, 1)} == {"idle-takeover-0"}
