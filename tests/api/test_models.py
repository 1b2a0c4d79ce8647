"""The ray.io/v1 models: wire names, KubeRay's defaults and enums, conditions and time helpers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from rayop.api import common, raycluster, rayjob, rayservice
from rayop.api.common import format_time, parse_time
from rayop.api.conditions import (
    find_condition,
    is_condition_true,
    object_conditions,
    remove_condition,
    set_condition,
)
from rayop.api.raycluster import (
    AuthMode,
    AuthOptions,
    NetworkPolicyOptions,
    RayCluster,
    RayClusterConditionType,
    RayClusterStatus,
    WorkerGroupSpec,
)
from rayop.api.rayjob import JobSubmissionMode, RayJob, RayJobSpec, RayJobStatus
from rayop.api.rayservice import ClusterUpgradeOptions, RayService, RayServiceStatuses

HEAD = {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}}}


def _snake(wire: str) -> str:
    """``desiredCPU`` -> ``desired_cpu``, ``serveConfigV2`` -> ``serve_config_v2``."""
    split_acronyms = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", wire)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", split_acronyms).lower()


def _models() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    for module in (common, raycluster, rayjob, rayservice):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, common.ApiModel):
                found.append(value)
    return found


def test_every_attribute_is_the_snake_case_of_its_wire_name() -> None:
    wrong = [
        f"{model.__name__}.{name} <-> {field.alias}"
        for model in _models()
        for name, field in model.model_fields.items()
        if _snake(field.alias or name) != name
    ]
    assert wrong == []
    assert _snake("enableK8sTokenAuth") == "enable_k8s_token_auth"
    assert common.wire_name("desired_cpu") == "desiredCPU"
    assert common.wire_name("entrypoint_num_cpus") == "entrypointNumCpus"
    assert _snake("runtimeEnvYAML") == "runtime_env_yaml"


def test_worker_group_defaults_are_kuberays() -> None:
    group = WorkerGroupSpec.model_validate({"groupName": "g", "template": {}})
    assert (group.replicas, group.min_replicas, group.max_replicas) == (0, 0, 2147483647)
    assert (group.num_of_hosts, group.priority) == (1, 0)
    assert group.suspend is None and group.scale_strategy is None


def test_rayjob_and_rayservice_defaults_are_kuberays() -> None:
    spec = RayJobSpec()
    assert spec.submission_mode == "K8sJobMode"
    assert JobSubmissionMode(spec.submission_mode) is JobSubmissionMode.K8S_JOB_MODE
    assert (spec.backoff_limit, spec.ttl_seconds_after_finished) == (0, 0)
    assert spec.shutdown_after_job_finishes is None and spec.suspend is None
    assert (RayJobStatus().succeeded, RayJobStatus().failed) == (0, 0)
    options = ClusterUpgradeOptions(
        gateway_class_name="istio", step_size_percent=10, interval_seconds=5
    )
    assert options.max_surge_percent == 100
    assert NetworkPolicyOptions().mode == "DenyAll"


def test_clusters_need_a_head_group_and_upgrade_options_their_required_fields() -> None:
    with pytest.raises(ValidationError, match="headGroupSpec"):
        RayCluster.model_validate({"metadata": {"name": "c"}, "spec": {}})
    with pytest.raises(ValidationError, match="gatewayClassName"):
        ClusterUpgradeOptions.model_validate({"stepSizePercent": 10, "intervalSeconds": 5})


def test_enums_the_crd_restricts_are_enforced_and_free_strings_are_not() -> None:
    assert AuthOptions.model_validate({"mode": "token"}).mode == AuthMode.TOKEN
    with pytest.raises(ValidationError):
        AuthOptions.model_validate({"mode": "password"})
    with pytest.raises(ValidationError):
        RayCluster.model_validate(
            {"spec": {"headGroupSpec": HEAD, "upgradeStrategy": {"type": "Rolling"}}}
        )
    # KubeRay's CRD leaves submissionMode and status.state free; the controller reports bad values.
    assert RayJobSpec.model_validate({"submissionMode": "Bogus"}).submission_mode == "Bogus"
    assert RayClusterStatus.model_validate({"state": "whatever"}).state == "whatever"


def test_enum_values_are_plain_strings_so_dumps_serialise_anywhere() -> None:
    cluster = RayCluster.model_validate(
        {"spec": {"headGroupSpec": HEAD, "authOptions": {"mode": "token"}}}
    )
    assert type(cluster.spec.auth_options.mode) is str  # type: ignore[union-attr]
    text = yaml.safe_dump(cluster.model_dump(by_alias=True, exclude_none=True))
    assert "mode: token" in text


def test_names_and_aliases_are_both_accepted_and_dumps_use_wire_names() -> None:
    by_alias = RayClusterStatus.model_validate({"desiredCPU": "2", "head": {"podIP": "10.0.0.1"}})
    by_name = RayClusterStatus(desired_cpu="2", head=raycluster.HeadInfo(pod_ip="10.0.0.1"))
    assert by_alias == by_name
    assert by_name.model_dump(by_alias=True, exclude_none=True) == {
        "desiredCPU": "2",
        "head": {"podIP": "10.0.0.1"},
    }


def test_top_level_objects_carry_api_version_kind_and_metadata() -> None:
    cluster = RayCluster(metadata={"name": "c", "namespace": "ns"}, spec={"headGroupSpec": HEAD})  # type: ignore[arg-type]
    wire = cluster.to_wire()
    assert (wire["apiVersion"], wire["kind"]) == ("ray.io/v1", "RayCluster")
    assert (cluster.name, cluster.namespace) == ("c", "ns")
    assert RayJob().to_wire()["kind"] == "RayJob"
    service = RayService.model_validate({"spec": {"rayClusterConfig": {"headGroupSpec": HEAD}}})
    assert service.kind == "RayService" and service.status is None


def test_unknown_fields_survive_a_round_trip() -> None:
    wire = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": {**HEAD, "futureField": {"x": 1}}, "anotherNewField": True},
    }
    assert RayCluster.model_validate(wire).to_wire() == wire


def test_a_full_status_parses_with_conditions() -> None:
    status = RayServiceStatuses.model_validate(
        {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "NonZeroServeEndpoints",
                    "message": "",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
            "numServeEndpoints": 2,
            "activeServiceStatus": {
                "rayClusterName": "svc-abcde",
                "applicationStatuses": {
                    "app": {
                        "status": "RUNNING",
                        "serveDeploymentStatuses": {"d": {"status": "HEALTHY"}},
                    }
                },
                "rayClusterStatus": {"state": "ready", "desiredMemory": "4Gi"},
            },
        }
    )
    assert is_condition_true(
        object_conditions({"status": status.model_dump(by_alias=True)}), "Ready"
    )
    active = status.active_service_status
    assert active is not None and active.application_statuses is not None
    assert active.application_statuses["app"].serve_deployment_statuses["d"].status == "HEALTHY"  # type: ignore[index]


def _condition(status: str, reason: str, generation: int = 0) -> dict[str, object]:
    return {
        "type": RayClusterConditionType.HEAD_POD_READY,
        "status": status,
        "reason": reason,
        "message": "",
        "observedGeneration": generation,
    }


def test_set_condition_moves_the_transition_time_only_when_the_status_changes() -> None:
    conditions: list[dict[str, object]] = []
    assert set_condition(conditions, _condition("False", "HeadPodNotFound"), now="t1")
    assert "observedGeneration" not in conditions[0]
    assert not set_condition(conditions, _condition("False", "HeadPodNotFound"), now="t2")
    assert set_condition(conditions, _condition("False", "Unknown", 3), now="t3")
    assert conditions[0]["lastTransitionTime"] == "t1" and conditions[0]["reason"] == "Unknown"
    assert conditions[0]["observedGeneration"] == 3
    assert set_condition(conditions, _condition("True", "HeadPodRunningAndReady"), now="t4")
    updated = conditions[0]  # a fresh name: mypy still holds the "t1" narrowed above
    assert updated["lastTransitionTime"] == "t4"
    assert "observedGeneration" not in conditions[0]
    assert is_condition_true(conditions, "HeadPodReady")
    assert find_condition(conditions, "ReplicaFailure") is None
    assert remove_condition(conditions, "HeadPodReady") and conditions == []


def test_times_format_like_kubernetes_and_parse_back() -> None:
    moment = datetime(2025, 3, 4, 5, 6, 7, 890000, tzinfo=timezone(timedelta(hours=2)))
    assert format_time(moment) == "2025-03-04T03:06:07Z"
    assert parse_time("2025-03-04T03:06:07Z") == datetime(2025, 3, 4, 3, 6, 7, tzinfo=UTC)
