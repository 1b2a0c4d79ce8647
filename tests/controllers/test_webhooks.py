"""rayop's validating webhooks answer as KubeRay's: 422 Invalid, one cause per problem."""

from __future__ import annotations

import copy
from typing import Any

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.webhooks.configuration import webhook_configuration
from rayop.controllers.webhooks.validators import PATHS, handlers

CONTAINERS = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}


def _cluster(name: str = "demo") -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "headGroupSpec": {"template": copy.deepcopy(CONTAINERS)},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "minReplicas": 0,
                    "maxReplicas": 3,
                    "template": copy.deepcopy(CONTAINERS),
                }
            ],
        },
    }


def _review(kind: str, obj: dict[str, Any], operation: str = "CREATE", old: Any = None) -> Any:
    request = {"uid": "u", "operation": operation, "object": obj, "oldObject": old}
    return handlers(FeatureGates())[PATHS[kind]](request)


def test_a_valid_cluster_is_allowed() -> None:
    verdict = _review("RayCluster", _cluster())
    assert verdict.allowed and verdict.status is None


def test_a_long_name_is_refused_with_kuberays_invalid_status() -> None:
    name = "x" * 54
    verdict = _review("RayCluster", _cluster(name))
    assert not verdict.allowed and verdict.status is not None
    assert verdict.status["code"] == 422 and verdict.status["reason"] == "Invalid"
    assert verdict.status["message"] == (
        f'RayCluster.ray.io "{name}" is invalid: metadata.name: Invalid value: "{name}": '
        "RayCluster name should be no more than 53 characters"
    )
    assert verdict.status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "{name}": RayCluster name should be no more than 53 '
            "characters",
            "field": "metadata.name",
        }
    ]


def test_spec_problems_and_duplicate_groups_are_refused_at_admission() -> None:
    obj = _cluster()
    obj["spec"]["workerGroupSpecs"][0].update(minReplicas=5, maxReplicas=2)
    verdict = _review("RayCluster", obj)
    assert verdict.status is not None
    assert verdict.status["message"] == (
        'RayCluster.ray.io "demo" is invalid: spec: Invalid value: worker group small has '
        "minReplicas 5 greater than maxReplicas 2"
    )
    obj = _cluster()
    obj["spec"]["workerGroupSpecs"].append(copy.deepcopy(obj["spec"]["workerGroupSpecs"][0]))
    verdict = _review("RayCluster", obj)
    assert verdict.status is not None
    fields = [c["field"] for c in verdict.status["details"]["causes"]]
    assert fields == ["spec.workerGroupSpecs[1]", "spec"]
    assert "worker group names must be unique" in verdict.status["message"]


def test_an_update_that_keeps_the_spec_checks_only_the_metadata() -> None:
    obj = _cluster()
    obj["spec"]["workerGroupSpecs"][0].update(minReplicas=5, maxReplicas=2)
    with_finalizer = copy.deepcopy(obj)
    with_finalizer["metadata"]["finalizers"] = ["ray.io/x"]
    assert _review("RayCluster", with_finalizer, "UPDATE", obj).allowed
    changed = copy.deepcopy(with_finalizer)
    changed["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 3
    assert not _review("RayCluster", changed, "UPDATE", obj).allowed
    assert _review("RayCluster", obj, "DELETE").allowed


def test_rayjob_and_rayservice_metadata_messages() -> None:
    job = {"metadata": {"name": "j" * 48}, "spec": {"clusterSelector": {"ray.io/cluster": "c"}}}
    verdict = _review("RayJob", job)
    assert verdict.status is not None
    assert verdict.status["message"] == (
        f'RayJob.ray.io "{"j" * 48}" is invalid: metadata.name: Invalid value: "{"j" * 48}": '
        "The RayJob metadata is invalid: RayJob name should be no more than 47 characters"
    )
    service = {
        "metadata": {"name": "svc", "annotations": {"ray.io/initializing-timeout": "0"}},
        "spec": {"rayClusterConfig": _cluster()["spec"]},
    }
    verdict = _review("RayService", service)
    assert verdict.status is not None
    assert verdict.status["message"].endswith(
        "RayService annotations is invalid: annotation ray.io/initializing-timeout must be a "
        "positive duration, got: 0"
    )


def test_gated_fields_are_refused_with_the_gate_named() -> None:
    obj = _cluster()
    obj["spec"]["networkPolicy"] = {"mode": "DenyAll"}
    verdict = _review("RayCluster", obj)
    assert verdict.status is not None and "RayClusterNetworkPolicy" in verdict.status["message"]


def test_the_configuration_is_kuberays() -> None:
    config = webhook_configuration("Q0E=", service_namespace="ray-system")
    assert config["metadata"]["name"] == "validating-webhook-configuration"
    assert [w["name"] for w in config["webhooks"]] == [
        "vraycluster.kb.io",
        "vrayjob.kb.io",
        "vrayservice.kb.io",
        "vraycronjob.kb.io",
    ]
    first = config["webhooks"][0]
    assert first["failurePolicy"] == "Fail" and first["sideEffects"] == "None"
    assert first["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert first["clientConfig"]["service"] == {
        "name": "webhook-service",
        "namespace": "ray-system",
        "path": "/validate-ray-io-v1-raycluster",
        "port": 443,
    }
    local = webhook_configuration("Q0E=", url="https://127.0.0.1:9443")
    assert local["webhooks"][1]["clientConfig"]["url"] == (
        "https://127.0.0.1:9443/validate-ray-io-v1-rayjob"
    )
