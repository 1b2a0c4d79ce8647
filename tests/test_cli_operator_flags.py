"""`rayop run` and `rayop up` turn KubeRay's flags into the same operator settings."""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from rayop.cli.flags import normalize_argv
from rayop.cli.kuberay_flags import KubeRayFeatureFlags, KubeRayLogFlags
from rayop.cli.log_plan import LogPlan, configure_logging
from rayop.cli.operator_flags import GoBool, OperatorFlags, parse_feature_gates, shared_settings
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.runtime.process.log_rotation import AgedRotatingFileHandler


def _settings(**overrides: str) -> OperatorSettings:
    values: dict[str, Any] = {
        "reconcile_concurrency": 4,
        "use_priority_queue": "false",
        "metrics_addr": "0",
        "health_probe_bind_address": ":9000",
        "qps": -1.0,
        "burst": 7,
        "feature_gates": "",
    }
    values.update(overrides)
    return shared_settings(**values)


def test_shared_flags_reach_the_operator_settings() -> None:
    settings = _settings(feature_gates="RayMultiHostIndexing=false")
    assert settings.reconcile_concurrency == 4
    assert settings.use_priority_queue is False
    assert settings.metrics_addr == "0"
    assert settings.health_probe_bind_address == ":9000"
    assert (settings.qps, settings.burst) == (-1.0, 7)
    gates = settings.options.feature_gates
    assert gates.ray_multi_host_indexing is False
    assert gates.ray_cluster_status_conditions is True


def test_feature_gates_parse_go_style_booleans_and_refuse_garbage() -> None:
    assert parse_feature_gates(" A=true, B=0 ,") == {"A": True, "B": False}
    with pytest.raises(typer.BadParameter):
        parse_feature_gates("RayMultiHostIndexing")
    with pytest.raises(typer.BadParameter):
        _settings(use_priority_queue="maybe")


def test_every_kuberay_gate_can_be_set_and_an_unknown_gate_stops_startup() -> None:
    gates = _settings(
        feature_gates="RayClusterNetworkPolicy=true,GCSFaultToleranceEmbeddedStorage=true,"
        "RayClusterMTLS=true,RayClusterHistoryServer=true,RayJobDeletionPolicy=false"
    ).options.feature_gates
    assert gates.ray_cluster_network_policy and gates.gcs_fault_tolerance_embedded_storage
    assert gates.ray_cluster_mtls and gates.ray_cluster_history_server
    assert gates.ray_job_deletion_policy is False
    assert gates.ray_cron_job is False  # not named: KubeRay's default
    with pytest.raises(typer.BadParameter, match="unrecognized feature gate: NoSuchGate"):
        _settings(feature_gates="RayClusterMTLS=true,NoSuchGate=true")


def test_rayop_run_exits_with_a_usage_error_on_an_unknown_gate() -> None:
    from typer.testing import CliRunner

    from rayop.cli.commands import loaded_app

    app = loaded_app()

    result = CliRunner().invoke(app, ["run", "--feature-gates=RayClusterNetworkPolicyy=true"])
    assert result.exit_code == 2
    output = " ".join(result.output.replace("│", " ").split())
    assert "unrecognized feature gate: RayClusterNetworkPolicyy" in output


# KubeRay v1.7.0's remaining operator flags (rayop.cli.kuberay_flags).


def test_kuberay_log_flags_resolve_with_rayops_own() -> None:
    plan = KubeRayLogFlags().plan(log_level="info", log_format="json")
    assert plan == LogPlan(
        level="info", stdout_format="json", file_path=None, file_format="json",
        stacktrace_level=None,
    )  # fmt: skip
    plan = KubeRayLogFlags(
        log_stdout_encoder="console", log_file_path="/tmp/x.log", log_file_encoder="",
        zap_log_level="error", zap_stacktrace_level="info",
    ).plan(log_level="debug", log_format="json")  # fmt: skip
    assert (plan.level, plan.stdout_format, plan.file_path) == ("error", "console", "/tmp/x.log")
    assert (plan.file_format, plan.stacktrace_level) == ("json", logging.INFO)
    devel = KubeRayLogFlags(zap_devel="true").plan(log_level="info", log_format="json")
    assert (devel.level, devel.stacktrace_level) == ("debug", logging.WARNING)
    assert KubeRayLogFlags(zap_log_level="3").plan(log_level="info", log_format="json").level == (
        "debug"
    )
    assert KubeRayLogFlags(zap_log_level="panic").plan(
        log_level="info", log_format="json"
    ).level == ("critical")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"log_stdout_encoder": "text"}, "--log-stdout-encoder: invalid encoder 'text'"),
        ({"log_file_encoder": "xml"}, "--log-file-encoder: invalid encoder 'xml'"),
        ({"zap_log_level": "warn"}, "--zap-log-level: invalid log level 'warn'"),
        ({"zap_log_level": "0"}, "--zap-log-level: invalid log level '0'"),
        ({"zap_encoder": "yaml"}, "--zap-encoder: invalid encoder value 'yaml'"),
        ({"zap_stacktrace_level": "debug"}, "invalid stacktrace level 'debug'"),
        ({"zap_time_encoding": "unix"}, "invalid time-encoding value 'unix'"),
        ({"zap_devel": "maybe"}, "--zap-devel expects true or false"),
    ],
)
def test_kuberay_log_flags_refuse_what_kuberay_refuses(flags: dict[str, str], message: str) -> None:
    with pytest.raises(typer.BadParameter, match=re.escape(message)):
        KubeRayLogFlags(**flags).plan(log_level="info", log_format="json")


def test_kuberay_feature_flags_make_kuberays_batch_scheduler_checks() -> None:
    assert KubeRayFeatureFlags(forced_cluster_upgrade="true").check() == ""  # no effect
    assert KubeRayFeatureFlags(batch_scheduler="volcano").check() == "volcano"
    assert KubeRayFeatureFlags(enable_batch_scheduler="true").check() == "volcano"
    with pytest.raises(typer.BadParameter, match="Please use batch-scheduler only"):
        KubeRayFeatureFlags(enable_batch_scheduler="true", batch_scheduler="yunikorn").check()
    with pytest.raises(typer.BadParameter, match="cannot be combined with --batch-scheduler"):
        KubeRayFeatureFlags(batch_scheduler="volcano").check(kubernetes_was=True)
    with pytest.raises(typer.BadParameter, match=r"name=slurm .*volcano, yunikorn"):
        KubeRayFeatureFlags(batch_scheduler="slurm").check()


def test_use_kubernetes_proxy_unset_means_a_direct_connection_as_in_kuberay() -> None:
    assert KubeRayFeatureFlags().kubernetes_proxy() is False
    assert KubeRayFeatureFlags(use_kubernetes_proxy="true").kubernetes_proxy() is True
    assert KubeRayFeatureFlags(use_kubernetes_proxy="false").kubernetes_proxy() is False
    with pytest.raises(typer.BadParameter):
        KubeRayFeatureFlags(use_kubernetes_proxy="direct").kubernetes_proxy()


def test_go_bare_boolean_flags_mean_true() -> None:
    argv = ["run", "--enable-metrics", "--zap-devel", "--use-kubernetes-proxy", "--qps", "5"]
    assert normalize_argv(argv) == [
        "run", "--enable-metrics=true", "--zap-devel=true", "--use-kubernetes-proxy=true",
        "--qps", "5",
    ]  # fmt: skip


def _rayop_run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "KUBECONFIG": "/nonexistent/kubeconfig"}
    return subprocess.run(
        [sys.executable, "-m", "rayop", "run", "--metrics-addr=0",
         "--health-probe-bind-address=0", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def test_kuberay_chart_flags_parse_and_unknown_ones_exit_2_naming_them() -> None:
    chart_args = [
        "--log-stdout-encoder", "json", "--log-file-encoder", "json",
        "--enable-leader-election=true", "--enable-metrics=true", "--reconcile-concurrency=1",
        "--qps=100", "--burst=200", "--use-kubernetes-proxy=false", "--forced-cluster-upgrade",
        "--zap-log-level=info", "--zap-encoder=json", "--zap-time-encoding=iso8601",
        "--zap-stacktrace-level=error", "--zap-devel=false",
        "--feature-gates=RayClusterStatusConditions=true",
    ]  # fmt: skip
    proc = _rayop_run(*chart_args)
    assert proc.returncode == 2, proc.stderr  # every flag parsed; no kubeconfig here
    assert "kubeconfig" in proc.stderr and "No such option" not in proc.stderr
    proc = _rayop_run("--no-such-kuberay-flag=1")
    assert proc.returncode == 2 and "--no-such-kuberay-flag" in proc.stderr


def test_config_and_batch_scheduler_stop_startup_with_exit_2() -> None:
    proc = _rayop_run("--config=/etc/kuberay/config.yaml")
    assert proc.returncode == 2
    assert "/etc/kuberay/config.yaml" in proc.stderr and "cannot read" in proc.stderr
    proc = _rayop_run("--batch-scheduler", "slurm")
    assert proc.returncode == 2 and "scheduler is not supported, name=slurm" in proc.stderr
    assert "kai-scheduler, scheduler-plugins" in proc.stderr


def test_log_file_path_writes_info_and_above_as_kuberay(tmp_path: Path) -> None:
    path = tmp_path / "kuberay.log"
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        configure_logging(
            LogPlan(level="error", stdout_format="json", file_path=str(path),
                    file_format="console", stacktrace_level=None)
        )  # fmt: skip
        handlers = [h for h in root.handlers if h not in saved[1]]
        rotating = [h for h in handlers if isinstance(h, logging.handlers.RotatingFileHandler)]
        assert [(h.maxBytes, h.backupCount) for h in rotating] == [(500 * 1024 * 1024, 10)]
        aged = [h for h in rotating if isinstance(h, AgedRotatingFileHandler)]
        assert [h.max_age for h in aged] == [30 * 24 * 3600]  # lumberjack MaxAge: 30 (days)
        logging.getLogger("rayop.test").debug("not written")
        logging.getLogger("rayop.test").info("written to the file only")
    finally:
        for handler in [h for h in root.handlers if h not in saved[1]]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(saved[0])
    text = path.read_text()
    assert "INFO\trayop.test: written to the file only" in text and "not written" not in text


def test_enable_metrics_reaches_the_operator_settings() -> None:
    assert OperatorFlags().settings().enable_metrics is False
    assert OperatorFlags(enable_metrics=GoBool(True)).settings().enable_metrics is True


def test_decision_events_are_off_unless_asked_for() -> None:
    assert OperatorFlags().settings().decision_events is False
    assert OperatorFlags(decision_events=GoBool(True)).settings().decision_events is True


def _restoring_root_logger() -> tuple[int, list[logging.Handler]]:
    root = logging.getLogger()
    return root.level, list(root.handlers)


def _restore_root_logger(saved: tuple[int, list[logging.Handler]]) -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h not in saved[1]]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(saved[0])


def test_zap_stacktrace_level_adds_the_call_stack_at_and_above_it() -> None:
    stream = io.StringIO()
    saved = _restoring_root_logger()
    try:
        from rayop.runtime.process.logsetup import configure_logging as configure

        configure("debug", "json", stream=stream, stacktrace_level=logging.ERROR)
        logging.getLogger("rayop.test").warning("no stack")
        logging.getLogger("rayop.test").error("with stack")
    finally:
        _restore_root_logger(saved)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [("stacktrace" in line) for line in lines] == [False, True]
    assert "test_zap_stacktrace_level_adds_the_call_stack" in lines[1]["stacktrace"]


def test_panic_level_keeps_only_critical_lines() -> None:
    stream = io.StringIO()
    saved = _restoring_root_logger()
    try:
        from rayop.runtime.process.logsetup import configure_logging as configure

        plan = KubeRayLogFlags(zap_log_level="panic").plan(log_level="info", log_format="json")
        configure(plan.level, "json", stream=stream)
        logging.getLogger("rayop.test").error("dropped")
        logging.getLogger("rayop.test").critical("kept")
    finally:
        _restore_root_logger(saved)
    assert [json.loads(line)["msg"] for line in stream.getvalue().splitlines()] == ["kept"]


def test_run_passes_kuberay_flags_into_the_operator_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    import rayop.cli.run as run_module
    from rayop.cli.commands import loaded_app

    app = loaded_app()

    seen: list[OperatorSettings] = []

    async def fake_run(kubeconfig: str | None, settings: OperatorSettings) -> None:
        seen.append(settings)

    monkeypatch.setattr(run_module, "_run", fake_run)
    saved = _restoring_root_logger()
    try:
        runner = CliRunner()
        args = ["run", "--use-kubernetes-proxy=false", "--enable-metrics=true", "--zap-devel",
                "--decision-events=true"]  # fmt: skip
        result = runner.invoke(app, normalize_argv(args))
        assert result.exit_code == 0, result.output
        result = runner.invoke(app, ["run"])
        assert result.exit_code == 0, result.output
    finally:
        _restore_root_logger(saved)
    assert [(s.use_kubernetes_proxy, s.enable_metrics, s.decision_events) for s in seen] == [
        (False, True, True),
        (False, False, False),
    ]


def test_kuberays_one_dash_go_form_gets_its_second_dash() -> None:
    argv = ["run", "-qps=50", "-enable-leader-election", "-log-file-path", "/x", "-n", "-"]
    assert normalize_argv(argv) == [
        "run", "--qps=50", "--enable-leader-election=true", "--log-file-path", "/x", "-n", "-",
    ]  # fmt: skip


def test_rayop_run_json_lines_carry_the_caller() -> None:
    proc = _rayop_run("--log-stdout-encoder", "json")
    assert proc.returncode == 2  # no kubeconfig here; the feature-gates line came first
    gates = next(json.loads(line) for line in proc.stdout.splitlines() + proc.stderr.splitlines()
                 if line.startswith("{") and "feature gates" in line)  # fmt: skip
    assert re.fullmatch(r"cli/operator_flags\.py:\d+", gates["caller"]), gates


def test_rayop_run_console_logs_off_a_terminal_are_one_record_a_line() -> None:
    proc = _rayop_run("--log-stdout-encoder", "console")
    assert proc.returncode == 2
    lines = (proc.stdout + proc.stderr).splitlines()
    (gates,) = [line for line in lines if "feature gates" in line]
    assert gates.split("\t")[1] == "INFO"
    assert gates.endswith("'KubernetesWAS': False}")  # the whole dict on the record's line
