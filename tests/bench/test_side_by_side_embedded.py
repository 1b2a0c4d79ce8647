"""benchmarks/side_by_side_embedded.py's figures: what bound a run's time (each process's share
of a core, from the once-a-second CPU samples) and the rows its table prints."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def modules(monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, ModuleType]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("process_sampler"), importlib.import_module("side_by_side")


def test_busy_summary_counts_a_process_busy_at_most_one_core_and_the_machine_at_all(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    sampler, _ = modules
    per_second = {
        "apiserver": [1.0, 0.9, 0.5, 0.0],
        "operator": [0.2, 0.2, 0.2, 0.2],
        "machine": [2.0, 1.0, 1.9, 1.7],
        "gone": [],
    }
    summary = sampler.busy_summary(per_second, cores=2)
    assert summary["apiserver"] == {"mean_cores": 0.6, "busy_share": 0.5}
    assert summary["operator"] == {"mean_cores": 0.2, "busy_share": 0.0}
    # the machine is busy when both cores are (1.8 of 2), not when one is
    assert summary["machine"] == {"mean_cores": 1.65, "busy_share": 0.5}
    assert "gone" not in summary, "a process never sampled has no figures"


def test_the_table_shows_the_plane_cpu_and_what_bound_the_time(
    modules: tuple[ModuleType, ModuleType],
) -> None:
    _, side = modules
    result = {
        "seconds_until_all_ready": 10.0,
        "operator_cpu_seconds": 4.0,
        "apiserver_cpu_seconds": 8.0,
        "busy": {"apiserver": {"mean_cores": 0.9, "busy_share": 0.8}},
        "idle": {
            "seconds": 600.0,
            "cpu_seconds": 1.0,
            "core_percent": 0.17,
            "cpu_ms_per_cluster_per_minute": 0.1,
            "requests": 3,
            "rss_mb": 90.0,
            "apiserver_cpu_seconds": 2.5,
        },
    }
    kuberay = {**result, "apiserver_cpu_seconds": 16.0}
    rows = dict(side.rows(result))
    assert rows["API server CPU (s)"] == 8.0
    assert rows["idle: API server CPU (s)"] == 2.5
    assert rows["creation: apiserver share of seconds busy"] == 0.8
    text = side.table([side.Run("rayop", 1, result), side.Run("kuberay", 1, kuberay)])
    assert "| API server CPU (s) | 16.0 | 8.0 | 0.50 |" in text
    real_tier = {"seconds_until_all_ready": 10.0, "operator_cpu_seconds": 4.0}
    assert "API server CPU (s)" not in dict(side.rows(real_tier)), "no plane process figure"
