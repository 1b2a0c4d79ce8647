"""RayService validation: KubeRay v1.7's checks with its exact messages, and the timeout format."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rayop.api.validation import Reason, initializing_timeout, validate_rayservice
from rayop.api.validation.go_values import format_duration, go_atoi, parse_duration

Obj = dict[str, Any]
CONTAINERS = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}
CLUSTER_SPEC: Obj = {
    "headGroupSpec": {"template": CONTAINERS},
    "workerGroupSpecs": [
        {"groupName": "small", "minReplicas": 0, "maxReplicas": 3, "template": CONTAINERS}
    ],
}
INVALID = "The RayService spec is invalid: "
META = "The RayService metadata is invalid: RayService "
TIMEOUT = "ray.io/initializing-timeout"


def service(annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    """Returns a usable RayService, ``spec`` fields replaced."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "svc", "namespace": "default", "annotations": annotations or {}},
        "spec": {
            "serveConfigV2": "applications: []\n",
            "rayClusterConfig": copy.deepcopy(CLUSTER_SPEC),
            **spec,
        },
    }


def incremental(options: Obj | None, autoscaling: bool = True) -> Obj:
    """Returns a RayService with NewClusterWithIncrementalUpgrade and ``options``."""
    strategy: Obj = {"type": "NewClusterWithIncrementalUpgrade"}
    if options is not None:
        strategy["clusterUpgradeOptions"] = {"maxSurgePercent": 100, **options}
    obj = service(upgradeStrategy=strategy)
    obj["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = autoscaling
    return obj


GOOD_OPTIONS = {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"}

CASES: dict[str, tuple[Obj, Reason, str]] = {
    "timeout not a duration": (
        service({TIMEOUT: "soon"}),
        Reason.INVALID_RAYSERVICE_METADATA,
        f"{META}annotations is invalid: annotation {TIMEOUT} has invalid format: soon. Expected "
        "Go duration format (e.g., '5m', '1h') or positive integer seconds",
    ),
    "timeout zero duration": (
        service({TIMEOUT: "0s"}),
        Reason.INVALID_RAYSERVICE_METADATA,
        f"{META}annotations is invalid: annotation {TIMEOUT} must be a positive duration, got: 0s",
    ),
    "timeout negative seconds": (
        service({TIMEOUT: "-5"}),
        Reason.INVALID_RAYSERVICE_METADATA,
        f"{META}annotations is invalid: annotation {TIMEOUT} must be a positive integer "
        "(seconds), got: -5",
    ),
    "name too long": (
        service() | {"metadata": {"name": "s" * 48}},
        Reason.INVALID_RAYSERVICE_METADATA,
        f"{META}name should be no more than 47 characters",
    ),
    "k8s token auth": (
        service(
            rayClusterConfig={
                **CLUSTER_SPEC,
                "rayVersion": "2.55.0",
                "authOptions": {"mode": "token", "enableK8sTokenAuth": True},
            }
        ),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}K8s token auth mode is currently not supported for RayService",
    ),
    "invalid cluster spec": (
        service(rayClusterConfig={**CLUSTER_SPEC, "headGroupSpec": {"template": {"spec": {}}}}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}headGroupSpec should have at least one container",
    ),
    "head service name": (
        service(
            rayClusterConfig={
                **CLUSTER_SPEC,
                "headGroupSpec": {
                    "template": CONTAINERS,
                    "headService": {"metadata": {"name": "mine"}},
                },
            }
        ),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set",
    ),
    "unknown upgrade type": (
        service(upgradeStrategy={"type": "BlueGreen"}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}Spec.UpgradeStrategy.Type value BlueGreen is invalid, valid options are "
        "NewClusterWithIncrementalUpgrade, NewCluster, or None",
    ),
    "incremental without autoscaling": (
        incremental(GOOD_OPTIONS, autoscaling=False),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}Ray Autoscaler is required for NewClusterWithIncrementalUpgrade",
    ),
    "incremental without options": (
        incremental(None),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade",
    ),
    "maxSurgePercent over 100": (
        incremental({**GOOD_OPTIONS, "maxSurgePercent": 101}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}maxSurgePercent must be between 0 and 100",
    ),
    "negative stepSizePercent": (
        incremental({**GOOD_OPTIONS, "stepSizePercent": -1}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}stepSizePercent must be between 0 and 100",
    ),
    "step over surge": (
        incremental({**GOOD_OPTIONS, "maxSurgePercent": 20, "stepSizePercent": 30}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}stepSizePercent must be less than or equal to maxSurgePercent",
    ),
    "zero interval": (
        incremental({**GOOD_OPTIONS, "intervalSeconds": 0}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}intervalSeconds must be greater than 0",
    ),
    "no gateway class": (
        incremental({**GOOD_OPTIONS, "gatewayClassName": ""}),
        Reason.INVALID_RAYSERVICE_SPEC,
        f"{INVALID}gatewayClassName is required for NewClusterWithIncrementalUpgrade",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kuberay_checks_refuse_with_kuberays_message(case: str) -> None:
    obj, reason, expected = CASES[case]
    problems = validate_rayservice(obj)
    assert [(p.reason, p.message) for p in problems] == [(reason, expected)]
    assert problems[0].event_message("default", "svc") == f"default/svc: {expected}"


def test_valid_services_pass() -> None:
    assert validate_rayservice(service()) == []
    assert validate_rayservice(service({TIMEOUT: "10m"})) == []
    assert validate_rayservice(service({TIMEOUT: "600"})) == []
    assert validate_rayservice(incremental(GOOD_OPTIONS)) == []


def test_incremental_options_are_checked_only_with_the_gate_on() -> None:
    obj = incremental({**GOOD_OPTIONS, "intervalSeconds": 0})
    assert validate_rayservice(obj, gates={"RayServiceIncrementalUpgrade": False}) == []


def test_rayops_own_checks_follow_kuberays() -> None:
    obj = service(serveConfigV2="- not a mapping")
    assert [p.message for p in validate_rayservice(obj)] == [
        "spec.serveConfigV2: not a YAML mapping"
    ]


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("5m", 300 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("1.5s", 1_500_000_000),
        ("300ms", 300_000_000),
        ("2us", 2_000),
        ("2\u00b5s", 2_000),
        ("-1s", -(10**9)),
        ("+3h", 3 * 3600 * 10**9),
        ("0", 0),
        (".5s", 500_000_000),
        ("5", None),
        ("5x", None),
        ("", None),
        ("m", None),
        (".s", None),
        ("9999999999h", None),
    ],
)
def test_go_durations_parse_as_time_parse_duration(text: str, nanoseconds: int | None) -> None:
    assert parse_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_500, "1.5\u00b5s"),
        (2_000_000, "2ms"),
        (1_500_000_000, "1.5s"),
        (300 * 10**9, "5m0s"),
        (3600 * 10**9, "1h0m0s"),
        (3723 * 10**9 + 400_000_000, "1h2m3.4s"),
        (-(90 * 10**9), "-1m30s"),
    ],
)
def test_durations_print_as_go_does(nanoseconds: int, text: str) -> None:
    assert format_duration(nanoseconds) == text


def test_integers_parse_as_strconv_atoi() -> None:
    assert [go_atoi(t) for t in ("12", "+12", "-3", " 1", "1_0", "1.0", "")] == [
        12,
        12,
        -3,
        None,
        None,
        None,
        None,
    ]


def test_initializing_timeout_reads_a_duration_or_seconds() -> None:
    assert initializing_timeout({TIMEOUT: "90s"}) == 90 * 10**9
    assert initializing_timeout({TIMEOUT: "120"}) == 120 * 10**9
    assert initializing_timeout({TIMEOUT: ""}) is None
    assert initializing_timeout({}) is None
    assert initializing_timeout({TIMEOUT: "soon"}) is None
