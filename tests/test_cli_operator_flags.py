"""`rayop run` and `rayop up` turn KubeRay's flags into the same operator settings."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from rayop.cli.operator_flags import parse_feature_gates, shared_settings
from rayop.controllers.operator import OperatorSettings


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

    from rayop.cli.app import app

    result = CliRunner().invoke(app, ["run", "--feature-gates=RayClusterNetworkPolicyy=true"])
    assert result.exit_code == 2
    output = " ".join(result.output.replace("│", " ").split())
    assert "unrecognized feature gate: RayClusterNetworkPolicyy" in output
