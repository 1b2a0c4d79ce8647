"""``rayop run --config``: KubeRay's Configuration file replaces the flags it has fields for."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rayop.cli.commands import loaded_app
from rayop.cli.flags import normalize_argv
from rayop.controllers.assembly.operator_settings import OperatorSettings

app = loaded_app()

FULL = """\
apiVersion: config.ray.io/v1alpha1
kind: Configuration
metricsAddr: "127.0.0.1:9080"
probeAddr: "127.0.0.1:9082"
enableLeaderElection: false
leaderElectionNamespace: ops
reconcileConcurrency: 3
watchNamespace: "team-a,team-b"
useKubernetesProxy: true
enableMetrics: true
qps: 50
burst: 70
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
defaultPodLabels:
  team: platform
"""


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[OperatorSettings]]:
    """Captures the settings ``rayop run`` would start the operator with."""
    import rayop.cli.run as run_module

    captured: list[OperatorSettings] = []

    async def fake_run(kubeconfig: str | None, settings: OperatorSettings) -> None:
        captured.append(settings)

    monkeypatch.setattr(run_module, "_run", fake_run)
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        yield captured
    finally:
        for handler in [h for h in root.handlers if h not in saved[1]]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(saved[0])


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, normalize_argv(["run", *args]))
    assert result.exit_code == 0, result.output
    return result.output


def test_the_file_sets_every_operator_setting_and_the_pod_defaults(
    tmp_path: Path, seen: list[OperatorSettings]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(FULL)
    invoke(f"--config={path}", "--feature-gates=RayClusterStatusConditions=false")
    (settings,) = seen
    assert settings.metrics_addr == "127.0.0.1:9080"
    assert settings.health_probe_bind_address == "127.0.0.1:9082"
    assert settings.enable_leader_election is False
    assert settings.leader_election_namespace == "ops"
    assert settings.reconcile_concurrency == 3
    assert settings.watch_namespaces == ("team-a", "team-b")
    assert settings.use_kubernetes_proxy is True and settings.enable_metrics is True
    assert (settings.qps, settings.burst) == (50.0, 70)
    defaults = settings.options.pod_defaults
    assert defaults.head_sidecars == ({"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"},)
    assert dict(defaults.labels) == {"team": "platform"}
    assert settings.options.feature_gates.by_name()["RayClusterStatusConditions"] is False


def test_with_a_file_the_flags_it_replaces_are_ignored_as_in_kuberay(
    tmp_path: Path, seen: list[OperatorSettings]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n")
    invoke(
        f"--config={path}",
        "--qps=5",
        "--burst=6",
        "--reconcile-concurrency=9",
        "--enable-leader-election=false",
        "--use-kubernetes-proxy=true",
        "--enable-metrics=true",
        "--watch-namespace=x",
        "--metrics-addr=:1",
    )
    (settings,) = seen
    assert (settings.qps, settings.burst, settings.reconcile_concurrency) == (100.0, 200, 1)
    assert settings.enable_leader_election is True and settings.watch_namespaces == ()
    assert settings.use_kubernetes_proxy is False and settings.enable_metrics is False
    assert settings.metrics_addr == ":8080"


def test_the_files_log_file_replaces_log_file_path(
    tmp_path: Path, seen: list[OperatorSettings]
) -> None:
    log_file = tmp_path / "kuberay.log"
    path = tmp_path / "config.yaml"
    path.write_text(
        f"apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nlogFile: {log_file}\n"
    )
    invoke(f"--config={path}", f"--log-file-path={tmp_path / 'ignored.log'}")
    assert log_file.exists() and "loaded the Configuration file" in log_file.read_text()
    assert not (tmp_path / "ignored.log").exists()


def _rayop_run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "1000", "KUBECONFIG": "/nonexistent/kubeconfig"}
    return subprocess.run(
        [sys.executable, "-m", "rayop", "run", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def test_a_bad_file_stops_startup_with_exit_2_naming_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    header = "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"
    path.write_text(header + "qsp: 5\n")
    proc = _rayop_run(f"--config={path}")
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:3:1: qsp: unknown field" in proc.stderr
    sidecars = "headSidecarContainers:\n- {name: log, image: a}\n- {name: log, image: b}\n"
    path.write_text(header + sidecars)
    proc = _rayop_run(f"--config={path}")
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:5:4: headSidecarContainers[1].name: Duplicate value: 'log'" in proc.stderr


def test_an_unknown_batch_scheduler_in_the_file_is_refused_like_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nbatchScheduler: slurm\n"
    )
    proc = _rayop_run(f"--config={path}")
    assert proc.returncode == 2
    assert "scheduler is not supported, name=slurm" in proc.stderr
