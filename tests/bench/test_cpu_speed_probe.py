"""benchmarks/cpu_speed_probe.py: a sample times the fixed work; the summary keeps the samples
between two times."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("cpu_speed_probe")


def test_a_sample_charges_the_work_to_cpu_and_never_less_than_to_the_wall(
    probe: ModuleType,
) -> None:
    s = probe.sample()
    assert s["cpu_ms"] > 0
    assert s["wall_ms"] >= s["cpu_ms"] * 0.9  # the thread's clock ticks coarser than the wall's


def test_the_summary_keeps_only_the_samples_in_the_window(probe: ModuleType) -> None:
    samples = [{"at": float(t), "cpu_ms": float(t), "wall_ms": 0.0} for t in range(1, 101)]
    out = probe.summary(samples, since=11.0, until=30.0)
    assert out["n"] == 20
    assert out["p50"] == 20.5
    assert 11.0 <= out["p10"] < out["p50"] < out["p90"] <= 30.0
    assert probe.summary(samples, since=200.0, until=300.0) == {}
    assert probe.summary(samples, since=5.0, until=5.0)["p90"] == 5.0
