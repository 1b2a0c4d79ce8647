"""KubeRay v1.7.0's history-server collector sidecar and the checks of ``historyServerOptions``."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api.validation.gates import Gates
from rayop.api.validation.raycluster import validate_raycluster
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.history_server import DEFAULT_EXPOSABLE_EVENT_TYPES

from ._fixtures import env_of, head_pod, load_sample, minimal_cluster, parse, worker_pod

GATE_ON = OperatorOptions(
    feature_gates=FeatureGates().with_overrides({"RayClusterHistoryServer": True})
)
GATES: Gates = {"RayClusterHistoryServer": True}
FQDN = "raycluster-historyserver-head-svc.default.svc.cluster.local"
RAY_EVENT_ENV = {
    "RAY_enable_ray_event": "true",
    "RAY_enable_core_worker_ray_event_to_aggregator": "true",
    "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR": "http://localhost:8084/v1/events",
    "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES": DEFAULT_EXPOSABLE_EVENT_TYPES,
    "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES": (
        DEFAULT_EXPOSABLE_EVENT_TYPES
    ),
}


def _sample() -> dict[str, Any]:
    return load_sample("ray-cluster.historyserver.yaml")


def test_the_head_gets_kuberay_s_collector() -> None:
    pod = head_pod(_sample(), options=GATE_ON)
    ray, collector = pod["spec"]["containers"]
    assert collector == {
        "name": "ray-history-collector",
        "image": "quay.io/kuberay/collector:nightly",
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "200m", "memory": "256Mi"},
        },
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "RAY_CLUSTER_NAME", "value": "raycluster-historyserver"},
            {"name": "RAY_CLUSTER_NAMESPACE", "value": "default"},
            {"name": "RAY_ROLE", "value": "Head"},
            {"name": "EVENTS_PORT", "value": "8084"},
            {"name": "FQ_RAY_IP", "value": FQDN},
            {"name": "RAY_DASHBOARD_ADDRESS", "value": "http://localhost:8265"},
            {"name": "STORAGE_BACKEND", "value": "GCS"},
            {"name": "GCS_BUCKET", "value": "my-gcs-bucket"},
        ],
        "volumeMounts": [{"name": "ray-logs", "mountPath": "/tmp/ray"}],
    }
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in ray["volumeMounts"]
    assert {"name": "ray-logs", "emptyDir": {}} in pod["spec"]["volumes"]
    env = env_of(ray)
    assert {k: env[k] for k in RAY_EVENT_ENV} == RAY_EVENT_ENV
    names = [e["name"] for e in ray["env"]]
    assert names[-5:] == list(RAY_EVENT_ENV)  # after every other Ray variable, as KubeRay


def test_a_worker_gets_the_collector_without_the_dashboard_address() -> None:
    cluster = _sample()
    pod = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=GATE_ON)
    collector = pod["spec"]["containers"][-1]
    env = env_of(collector)
    assert env["RAY_ROLE"] == "Worker" and env["FQ_RAY_IP"] == FQDN
    assert "RAY_DASHBOARD_ADDRESS" not in env
    assert env_of(pod["spec"]["containers"][0])["RAY_enable_ray_event"] == "true"


def test_defaults_owner_labels_and_user_settings() -> None:
    cluster = minimal_cluster(
        historyServerOptions={
            "collectorOptions": {
                "image": "c:1",
                "env": [{"name": "RAY_DASHBOARD_ADDRESS", "value": "http://elsewhere:1"}],
            }
        }
    )
    cluster["metadata"]["labels"] = {
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/originated-from-cr-name": "job-1",
    }
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_enable_ray_event", "value": "false"}
    ]
    pod = head_pod(cluster, options=GATE_ON)
    ray, collector = pod["spec"]["containers"]
    assert collector["imagePullPolicy"] == "IfNotPresent"
    assert collector["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }
    env = env_of(collector)
    assert (env["OWNER_KIND"], env["OWNER_NAME"]) == ("RayJob", "job-1")
    assert env["RAY_DASHBOARD_ADDRESS"] == "http://elsewhere:1"  # the user's, once
    assert [e["name"] for e in collector["env"]].count("RAY_DASHBOARD_ADDRESS") == 1
    assert env_of(ray)["RAY_enable_ray_event"] == "false"  # the user's value is kept


def test_token_auth_reaches_the_collector() -> None:
    cluster = _sample()
    cluster["spec"]["rayVersion"] = "2.52.0"
    cluster["spec"]["authOptions"] = {"mode": "token"}
    collector = head_pod(cluster, options=GATE_ON)["spec"]["containers"][-1]
    env = env_of(collector)
    assert env["RAY_AUTH_MODE"] == "token"
    assert env["RAY_AUTH_TOKEN"] == {
        "secretKeyRef": {"name": "raycluster-historyserver", "key": "auth_token"}
    }


def test_with_the_gate_off_no_collector_is_added() -> None:
    assert len(head_pod(_sample(), options=OperatorOptions())["spec"]["containers"]) == 1


def _problem(options: dict[str, Any] | None = None, **spec: Any) -> str:
    cluster = minimal_cluster(historyServerOptions=options, **spec)
    problems = validate_raycluster(parse(cluster), gates=GATES)
    return problems[0].message if problems else ""


def _collector(*env: tuple[str, str], image: str = "c:1") -> dict[str, Any]:
    return {"collectorOptions": {"image": image, "env": [{"name": n, "value": v} for n, v in env]}}


def test_the_sample_is_valid_with_the_gate_on() -> None:
    assert validate_raycluster(parse(_sample()), gates=GATES) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "historyServerOptions.collectorOptions must be set"),
        (
            _collector(("STORAGE_BACKEND", "GCS"), image=""),
            "historyServerOptions.collectorOptions.image must be set",
        ),
        (
            _collector(("STORAGE_BACKEND", "GCS"), ("RAY_ROLE", "x")),
            "historyServerOptions.collectorOptions.env must not contain RAY_ROLE: it is managed "
            "by KubeRay and injected automatically into the collector container",
        ),
        (
            _collector(),
            "STORAGE_BACKEND environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env",
        ),
        (
            _collector(("STORAGE_BACKEND", "gcs")),
            "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS",
        ),
        (
            _collector(("STORAGE_BACKEND", "S3")),
            "S3_REGION environment variable must be set when STORAGE_BACKEND is S3",
        ),
        (
            _collector(("STORAGE_BACKEND", "ALIYUNOSS"), ("OSS_BUCKET", "b")),
            "OSS_ENDPOINT environment variable must be set when STORAGE_BACKEND is ALIYUNOSS",
        ),
        (
            _collector(("STORAGE_BACKEND", "AzureBlob")),
            "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment "
            "variable must be set when STORAGE_BACKEND is AZUREBLOB",
        ),
        (
            _collector(("STORAGE_BACKEND", "AZUREBLOB"), ("AZURE_STORAGE_AUTH_MODE", " Default ")),
            "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is "
            "AZUREBLOB and AZURE_STORAGE_AUTH_MODE is default",
        ),
    ],
)
def test_kuberay_s_collector_checks(options: dict[str, Any], message: str) -> None:
    assert _problem(options) == message


def test_a_template_container_may_not_take_the_collector_s_name() -> None:
    cluster = minimal_cluster(
        historyServerOptions=_collector(("STORAGE_BACKEND", "S3"), ("S3_REGION", "r"))
    )
    cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"].append(
        {"name": "ray-history-collector", "image": "x"}
    )
    (problem,) = validate_raycluster(parse(cluster), gates=GATES)
    assert problem.message == (
        "worker group g pod template must not define a container with name "
        "'ray-history-collector' when history server collector options are enabled"
    )
