"""Choosing the scheduler, KubeRay's flag checks, and the startup checks' version parsing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rayop.controllers.batchscheduler.kubernetes_was import KubernetesWASScheduler
from rayop.controllers.batchscheduler.registry import (
    SCHEDULER_NAMES,
    BatchSchedulerConfigError,
    check_batch_scheduler_config,
    scheduler_for,
)
from rayop.controllers.batchscheduler.volcano import VolcanoScheduler
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.config.startup_checks import parse_git_version


def test_names_are_kuberays() -> None:
    assert SCHEDULER_NAMES == ("volcano", "yunikorn", "kai-scheduler", "scheduler-plugins")
    for name in SCHEDULER_NAMES:
        scheduler = scheduler_for(OperatorOptions(batch_scheduler=name))
        assert scheduler is not None and scheduler.name == name
    assert scheduler_for(OperatorOptions()) is None


def test_the_was_gate_selects_kubernetes_was() -> None:
    gates = FeatureGates(kubernetes_was=True)
    assert isinstance(scheduler_for(OperatorOptions(feature_gates=gates)), KubernetesWASScheduler)


def test_checks_as_kuberays_validate_batch_scheduler_config() -> None:
    check = check_batch_scheduler_config
    assert check(enable=False, scheduler="", kubernetes_was=False) == ""
    assert check(enable=True, scheduler="", kubernetes_was=False) == "volcano"
    assert check(enable=False, scheduler="kai-scheduler", kubernetes_was=False) == "kai-scheduler"
    assert check(enable=False, scheduler="", kubernetes_was=True) == ""
    with pytest.raises(BatchSchedulerConfigError, match="Please use batch-scheduler only"):
        check(enable=True, scheduler="volcano", kubernetes_was=False)
    with pytest.raises(BatchSchedulerConfigError, match="cannot be combined"):
        check(enable=True, scheduler="", kubernetes_was=True)
    with pytest.raises(BatchSchedulerConfigError) as refused:
        check(enable=False, scheduler="Volcano", kubernetes_was=False)
    assert str(refused.value) == (
        "scheduler is not supported, name=Volcano "
        "(valid names: volcano, yunikorn, kai-scheduler, scheduler-plugins)"
    )
    assert isinstance(scheduler_for(OperatorOptions(batch_scheduler="volcano")), VolcanoScheduler)


def test_git_versions() -> None:
    assert parse_git_version("v1.37.2") == (1, 37, 2)
    assert parse_git_version("v1.35.0-gke.1200") == (1, 35, 0)
    with pytest.raises(ValueError, match="invalid semantic version"):
        parse_git_version("latest")


def test_rayop_up_refuses_an_unknown_scheduler_with_exit_2() -> None:
    env = {**os.environ, "COLUMNS": "250"}
    proc = subprocess.run(
        [sys.executable, "-m", "rayop", "up", "--batch-scheduler=slurm"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "scheduler is not supported, name=slurm (valid names: volcano," in proc.stderr
