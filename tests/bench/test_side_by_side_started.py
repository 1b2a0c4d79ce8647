"""benchmarks/side_by_side.py creates no cluster until the operator's log says its RayCluster
controller started its workers (controller-runtime's line, which rayop logs too)."""

from __future__ import annotations

import importlib
import json
import logging
from pathlib import Path

import pytest

from rayop.runtime.process.logsetup import format_json

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

KUBERAY_LINES = [  # KubeRay v1.7.0's own lines, as its log had them (side_by_side, 2026-12-02)
    {"level": "info", "logger": "controllers.RayCluster", "msg": "Starting EventSource"},
    {"level": "info", "logger": "controllers.RayJob", "msg": "Starting workers", "worker count": 1},
]
KUBERAY_STARTED = {
    "level": "info",
    "logger": "controllers.RayCluster",
    "msg": "Starting workers",
    "worker count": 1,
}


def test_the_raycluster_controllers_starting_workers_line_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    started = importlib.import_module("side_by_side").controller_started
    log = tmp_path / "kuberay.log"
    assert not started(log), "no log yet"
    log.write_text("".join(json.dumps(line) + "\n" for line in KUBERAY_LINES))
    assert not started(log), "another controller's workers"
    with log.open("a") as out:
        out.write(json.dumps(KUBERAY_STARTED) + "\n")
    assert started(log)


def test_rayops_own_line_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rayop's controller logs the same line, in its own JSON, naming the controller."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    started = importlib.import_module("side_by_side").controller_started
    record = logging.LogRecord(
        "rayop.runtime.controller", logging.INFO, "", 0, "Starting workers", (), None
    )
    record.__dict__.update({"controller": "raycluster-controller", "worker count": 1})
    log = tmp_path / "rayop.log"
    log.write_text(format_json(record) + "\n")
    assert started(log)
