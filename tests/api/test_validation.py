"""Semantic validation: what the CRD schema lets through but the controllers cannot use."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.api.common import Condition, ConditionStatus
from rayop.api.raycluster import RayCluster, RayClusterStatus
from rayop.api.validation import (
    validate_raycluster,
    validate_raycluster_status,
    validate_rayjob,
    validate_rayservice,
)

CONTAINERS = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}


def _cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {
            "headGroupSpec": {"template": copy.deepcopy(CONTAINERS)},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 3,
                    "template": copy.deepcopy(CONTAINERS),
                }
            ],
            **spec,
        },
    }


def test_a_plain_cluster_has_no_problems() -> None:
    assert validate_raycluster(_cluster()) == []
    assert validate_raycluster(RayCluster.model_validate(_cluster())) == []


def test_every_sample_is_valid(compat_dir: Path) -> None:
    validators = {
        "RayCluster": validate_raycluster,
        "RayJob": validate_rayjob,
        "RayService": validate_rayservice,
    }
    problems = []
    for path in sorted((compat_dir / "samples").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document["apiVersion"].startswith("ray.io/"):
                problems += [f"{path.name}: {p}" for p in validators[document["kind"]](document)]
    assert problems == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda c: c["spec"]["workerGroupSpecs"][0].update(minReplicas=5, maxReplicas=2),
            "spec.workerGroupSpecs[0].minReplicas: 5 is greater than maxReplicas 2",
        ),
        (lambda c: c["metadata"].update(name="x" * 54), "longer than 53 characters"),
        (lambda c: c["metadata"].update(name="Demo_1"), "is not a DNS-1035 label"),
        (
            lambda c: c["spec"]["workerGroupSpecs"][0].update(groupName=""),
            "spec.workerGroupSpecs[0].groupName: empty",
        ),
        (
            lambda c: c["spec"]["workerGroupSpecs"].append(
                copy.deepcopy(c["spec"]["workerGroupSpecs"][0])
            ),
            "spec.workerGroupSpecs[1].groupName: 'small' is used by another group",
        ),
        (
            lambda c: c["spec"]["workerGroupSpecs"][0].update(groupName="bad name!"),
            "is not a valid label value",
        ),
        (
            lambda c: c["spec"]["headGroupSpec"].update(template={"spec": {"containers": []}}),
            "spec.headGroupSpec.template.spec.containers: no container",
        ),
        (
            lambda c: c["spec"]["workerGroupSpecs"][0].update(replicas=-1),
            "spec.workerGroupSpecs[0].replicas: -1 is negative",
        ),
        (
            lambda c: c["spec"]["workerGroupSpecs"][0].update(numOfHosts=0),
            "spec.workerGroupSpecs[0].numOfHosts: 0 is less than 1",
        ),
        (lambda c: c["spec"].update(managedBy="someone-else"), "spec.managedBy"),
        (
            lambda c: c["spec"].update(rayVersion="2.46.0", authOptions={"mode": "token"}),
            "token auth needs Ray >= 2.52",
        ),
        (
            lambda c: c["spec"].update(
                enableInTreeAutoscaling=True,
                autoscalerOptions={"version": "v2"},
                headGroupSpec={
                    "template": {"spec": {**CONTAINERS["spec"], "restartPolicy": "Always"}}
                },
            ),
            "spec.headGroupSpec.template.spec.restartPolicy: autoscaler v2 needs Never",
        ),
        (
            lambda c: c["spec"].update(gcsFaultToleranceOptions={}),
            "spec.gcsFaultToleranceOptions.redisAddress: required by the redis backend",
        ),
        (
            lambda c: (
                c["spec"].update(upgradeStrategy={"type": "Recreate"}),
                c["metadata"].update(labels={"ray.io/originated-from-crd": "RayJob"}),
            ),
            "spec.upgradeStrategy: not allowed on a RayCluster created by a RayJob",
        ),
        (lambda c: c["spec"].pop("headGroupSpec"), "spec.headGroupSpec: Field required"),
    ],
)
def test_unusable_clusters_are_reported_with_the_field(edit: Any, expected: str) -> None:
    cluster = _cluster()
    edit(cluster)
    problems = validate_raycluster(cluster)
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_53_characters_is_still_a_valid_cluster_name() -> None:
    cluster = _cluster()
    cluster["metadata"]["name"] = "a" * 53
    assert validate_raycluster(cluster) == []


def test_suspending_and_suspended_together_is_an_invalid_status() -> None:
    def condition(type_: str) -> Condition:
        return Condition(
            type=type_,
            status=ConditionStatus.TRUE,
            reason="x",
            message="",
            last_transition_time="t",
        )

    status = RayClusterStatus(conditions=[condition("RayClusterSuspending")])
    assert validate_raycluster_status(status) == []
    status.conditions.append(condition("RayClusterSuspended"))  # type: ignore[union-attr]
    assert validate_raycluster_status(status) == [
        "status.conditions: RayClusterSuspending and RayClusterSuspended are both True"
    ]


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "job"},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": _cluster()["spec"], **spec},
    }


def test_rayjob_rules() -> None:
    assert validate_rayjob(_job()) == []
    assert validate_rayjob(
        {"metadata": {"name": "j" * 48}, "spec": {"clusterSelector": {"ray.io/cluster": "c"}}}
    ) == ["metadata.name: '" + "j" * 48 + "' is longer than 47 characters"]
    assert validate_rayjob({"metadata": {"name": "j"}, "spec": {}}) == [
        "spec: one of rayClusterSpec or clusterSelector is required"
    ]
    assert validate_rayjob(_job(suspend=True)) == [
        "spec.suspend: a RayJob can be suspended only with shutdownAfterJobFinishes"
    ]
    assert validate_rayjob(_job(submissionMode="Magic"))[0].startswith(
        "spec.submissionMode: 'Magic'"
    )
    assert validate_rayjob(
        _job(submissionMode="SidecarMode", submitterConfig={"backoffLimit": 1})
    ) == ["spec.submitterConfig: not supported in SidecarMode"]
    assert validate_rayjob(_job(entrypointResources="[1]")) == [
        "spec.entrypointResources: not a JSON object"
    ]
    bad_group = _job()
    bad_group["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["maxReplicas"] = -1
    assert any(
        p.startswith("spec.rayClusterSpec.workerGroupSpecs[0].maxReplicas")
        for p in validate_rayjob(bad_group)
    )


def test_rayservice_rules() -> None:
    service: dict[str, Any] = {
        "metadata": {"name": "svc"},
        "spec": {"rayClusterConfig": _cluster()["spec"], "serveConfigV2": "applications: []\n"},
    }
    assert validate_rayservice(service) == []
    service["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade"}
    assert validate_rayservice(service) == [
        "spec.upgradeStrategy.clusterUpgradeOptions: required by NewClusterWithIncrementalUpgrade"
    ]
    service["spec"]["upgradeStrategy"] = {"type": "BlueGreen"}
    assert validate_rayservice(service)[0].startswith("spec.upgradeStrategy.type: 'BlueGreen'")
    service["spec"]["upgradeStrategy"] = None
    service["spec"]["serveConfigV2"] = "- not a mapping"
    assert validate_rayservice(service) == ["spec.serveConfigV2: not a YAML mapping"]


def test_escaped_resources_param_is_accepted_and_garbage_is_named() -> None:
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc"},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {"resources": '"{\\"TPU\\": 4}"'},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "rayStartParams": {"resources": "{TPU: four}"},
                    "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}},
                }
            ],
        },
    }
    assert validate_raycluster(cluster) == [
        "spec.workerGroupSpecs[0].rayStartParams.resources: '{TPU: four}' is not a JSON object"
    ]
