"""RayJob validation: each KubeRay v1.7 check refuses with KubeRay's exact message and reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rayop.api.validation import Reason, validate_rayjob

Obj = dict[str, Any]
CONTAINERS = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}
CLUSTER_SPEC: Obj = {
    "headGroupSpec": {"template": CONTAINERS},
    "workerGroupSpecs": [
        {"groupName": "small", "minReplicas": 0, "maxReplicas": 3, "template": CONTAINERS}
    ],
}
SELECTOR = {"ray.io/cluster": "existing"}
INVALID = "The RayJob spec is invalid: "


def job(**spec: Any) -> Obj:
    """Returns a usable RayJob with its own cluster, ``spec`` fields replaced."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {
            "entrypoint": "python x.py",
            "rayClusterSpec": copy.deepcopy(CLUSTER_SPEC),
            **spec,
        },
    }


def selector_job(**spec: Any) -> Obj:
    obj = job(**{"clusterSelector": dict(SELECTOR), **spec})
    obj["spec"].pop("rayClusterSpec")
    return obj


def autoscaling_job(**spec: Any) -> Obj:
    obj = job(**spec)
    obj["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    return obj


def rule(policy: str, condition: Obj | None = None, *, ttl: int = 0) -> Obj:
    return {"policy": policy, "condition": {"ttlSeconds": ttl, **(condition or {})}}


def rules(*items: Obj) -> Obj:
    return {"deletionRules": list(items)}


def legacy(on_success: str, on_failure: str) -> Obj:
    return {"onSuccess": {"policy": on_success}, "onFailure": {"policy": on_failure}}


SUCCEEDED = {"jobStatus": "SUCCEEDED"}
FAILED = {"jobDeploymentStatus": "Failed"}

CASES: dict[str, tuple[Obj, str]] = {
    "suspend without shutdown": (
        job(suspend=True),
        f"{INVALID}a RayJob with shutdownAfterJobFinishes set to false is not allowed to be "
        "suspended",
    ),
    "negative ttl": (
        job(ttlSecondsAfterFinished=-1),
        f"{INVALID}TTLSecondsAfterFinished must be a non-negative integer",
    ),
    "ttl without shutdown": (
        job(ttlSecondsAfterFinished=10),
        f"{INVALID}a RayJob with shutdownAfterJobFinishes set to false cannot have "
        "TTLSecondsAfterFinished",
    ),
    "deletionRules with shutdownAfterJobFinishes": (
        job(shutdownAfterJobFinishes=True, deletionStrategy=rules(rule("DeleteSelf", SUCCEEDED))),
        f"{INVALID}spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are "
        "mutually exclusive",
    ),
    "deletionRules with legacy policies": (
        job(
            deletionStrategy={
                **legacy("DeleteCluster", "DeleteCluster"),
                **rules(rule("DeleteSelf", SUCCEEDED)),
            }
        ),
        f"{INVALID}Cannot use both legacy onSuccess/onFailure fields and deletionRules "
        "simultaneously",
    ),
    "empty deletion strategy": (
        job(deletionStrategy={}),
        f"{INVALID}DeletionStrategy requires either BOTH onSuccess and onFailure, OR the "
        "deletionRules field (cannot be empty)",
    ),
    "duplicate rules": (
        job(
            deletionStrategy=rules(
                rule("DeleteCluster", SUCCEEDED, ttl=10), rule("DeleteCluster", SUCCEEDED, ttl=20)
            )
        ),
        "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus "
        "'SUCCEEDED'",
    ),
    "duplicate deployment-status rules": (
        job(deletionStrategy=rules(rule("DeleteSelf", FAILED), rule("DeleteSelf", FAILED))),
        "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteSelf' and "
        "JobDeploymentStatus 'Failed'",
    ),
    "rule with both statuses": (
        job(deletionStrategy=rules(rule("DeleteSelf", SUCCEEDED | FAILED))),
        "deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time",
    ),
    "rule with no status": (
        job(deletionStrategy=rules(rule("DeleteSelf"))),
        "deletionRules[0]: exactly one of JobStatus and JobDeploymentStatus must be set",
    ),
    "DeleteWorkers rule with autoscaling": (
        autoscaling_job(deletionStrategy=rules(rule("DeleteWorkers", SUCCEEDED))),
        "deletionRules[0]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling "
        "enabled",
    ),
    "DeleteCluster rule with clusterSelector": (
        selector_job(deletionStrategy=rules(rule("DeleteCluster", SUCCEEDED))),
        "deletionRules[0]: DeletionPolicyType 'DeleteCluster' not supported when "
        "ClusterSelector is set",
    ),
    "TTLs out of order, every failure joined": (
        job(
            deletionStrategy=rules(
                rule("DeleteSelf", SUCCEEDED, ttl=10),
                rule("DeleteCluster", SUCCEEDED, ttl=20),
                rule("DeleteWorkers", SUCCEEDED, ttl=30),
                rule("DeleteSelf", FAILED, ttl=5),
                rule("DeleteSelf", FAILED, ttl=6),
            )
        ),
        "deletionRules[4]: duplicate rule for DeletionPolicyType 'DeleteSelf' and "
        "JobDeploymentStatus 'Failed'\n"
        "for JobStatus 'SUCCEEDED': DeleteCluster TTL (20) must be >= DeleteWorkers TTL (30)\n"
        "for JobStatus 'SUCCEEDED': DeleteSelf TTL (10) must be >= DeleteCluster TTL (20)",
    ),
    "legacy policy missing": (
        job(deletionStrategy={"onSuccess": {"policy": "DeleteCluster"}}),
        "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using "
        "the legacy deletion policy fields of DeletionStrategy",
    ),
    "legacy policy type unset": (
        job(deletionStrategy={"onSuccess": {}, "onFailure": {"policy": "DeleteCluster"}}),
        "the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when "
        "DeletionStrategy is enabled",
    ),
    "legacy DeleteCluster with clusterSelector": (
        selector_job(deletionStrategy=legacy("DeleteSelf", "DeleteCluster")),
        "the ClusterSelector mode doesn't support DeletionStrategy=DeleteCluster on failure",
    ),
    "legacy DeleteWorkers with autoscaling": (
        autoscaling_job(deletionStrategy=legacy("DeleteWorkers", "DeleteSelf")),
        "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling "
        "enabled",
    ),
    "legacy DeleteNone with shutdown": (
        job(shutdownAfterJobFinishes=True, deletionStrategy=legacy("DeleteNone", "DeleteSelf")),
        f"{INVALID}shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'",
    ),
    "clusterSelector with suspend": (
        selector_job(suspend=True, shutdownAfterJobFinishes=True),
        f"{INVALID}the ClusterSelector mode doesn't support the suspend operation",
    ),
    "neither cluster nor selector": (
        {"metadata": {"name": "job"}, "spec": {"entrypoint": "x"}},
        f"{INVALID}one of RayClusterSpec or ClusterSelector must be set",
    ),
    "selector without a cluster name": (
        selector_job(clusterSelector={"other": "x"}),
        "cluster name in ClusterSelector should not be empty",
    ),
    "selector in SidecarMode": (
        selector_job(submissionMode="SidecarMode"),
        "ClusterSelector is not supported in SidecarMode",
    ),
    "backoffLimit with clusterSelector": (
        selector_job(backoffLimit=2),
        f"{INVALID}BackoffLimit is incompatible with ClusterSelector mode",
    ),
    "backoffLimit in InteractiveMode": (
        job(submissionMode="InteractiveMode", backoffLimit=1),
        f"{INVALID}BackoffLimit is incompatible with InteractiveMode",
    ),
    "submitterPodTemplate in SidecarMode": (
        job(submissionMode="SidecarMode", submitterPodTemplate={"spec": {}}),
        "Currently, SidecarMode doesn't support SubmitterPodTemplate",
    ),
    "submitterConfig in SidecarMode": (
        job(submissionMode="SidecarMode", submitterConfig={"backoffLimit": 1}),
        "Currently, SidecarMode doesn't support SubmitterConfig",
    ),
    "k8s token auth": (
        job(
            rayClusterSpec={
                **CLUSTER_SPEC,
                "rayVersion": "2.55.0",
                "authOptions": {"mode": "token", "enableK8sTokenAuth": True},
            }
        ),
        f"{INVALID}K8s token auth mode is currently not supported for RayJob",
    ),
    "invalid cluster spec": (
        job(rayClusterSpec={**CLUSTER_SPEC, "authOptions": {"mode": "token"}}),
        f"{INVALID}authOptions.mode is 'token' but RayVersion was not specified. Ray version "
        "2.52.0 or later is required",
    ),
    "activeDeadlineSeconds zero": (
        job(activeDeadlineSeconds=0),
        f"{INVALID}activeDeadlineSeconds must be a positive integer",
    ),
    "negative backoffLimit": (
        job(backoffLimit=-1),
        f"{INVALID}backoffLimit must be a positive integer",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_kuberay_spec_checks_refuse_with_kuberays_message(case: str) -> None:
    obj, expected = CASES[case]
    problems = validate_rayjob(obj)
    assert [(p.reason, p.message) for p in problems] == [(Reason.INVALID_RAYJOB_SPEC, expected)]
    assert problems[0].event_message("default", "job") == f"default/job: {expected}"


def test_sidecar_mode_head_restart_policy() -> None:
    obj = job(submissionMode="SidecarMode")
    obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"] = {
        "spec": {**CONTAINERS["spec"], "restartPolicy": "OnFailure"}
    }
    assert [p.message for p in validate_rayjob(obj)] == [
        "restartPolicy for head Pod should be Never or unset when using SidecarMode"
    ]


def test_valid_jobs_pass() -> None:
    assert validate_rayjob(job()) == []
    assert validate_rayjob(selector_job()) == []
    assert (
        validate_rayjob(
            job(
                shutdownAfterJobFinishes=False,
                deletionStrategy=rules(
                    rule("DeleteWorkers", SUCCEEDED, ttl=0),
                    rule("DeleteCluster", SUCCEEDED, ttl=10),
                    rule("DeleteSelf", SUCCEEDED, ttl=20),
                ),
            )
        )
        == []
    )


def test_deletion_strategy_with_its_gate_off_is_left_to_the_gate_check() -> None:
    obj = job(deletionStrategy={})
    assert validate_rayjob(obj, gates={"RayJobDeletionPolicy": False}) == []


def test_metadata_and_status_reasons() -> None:
    long = job()
    long["metadata"]["name"] = "j" * 48
    assert [(p.reason, p.message) for p in validate_rayjob(long)] == [
        (
            Reason.INVALID_RAYJOB_METADATA,
            "The RayJob metadata is invalid: RayJob name should be no more than 47 characters",
        )
    ]
    waiting = job()
    waiting["status"] = {"jobDeploymentStatus": "Waiting"}
    assert [(p.reason, p.message) for p in validate_rayjob(waiting)] == [
        (
            Reason.INVALID_RAYJOB_STATUS,
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when "
            "SubmissionMode is not InteractiveMode",
        )
    ]
    waiting["spec"]["submissionMode"] = "InteractiveMode"
    assert validate_rayjob(waiting) == []


def test_rayops_own_checks_follow_kuberays() -> None:
    assert [p.message for p in validate_rayjob(job(entrypointResources="[1]"))] == [
        "spec.entrypointResources: not a JSON object"
    ]
    assert validate_rayjob(job(submissionMode="Magic"))[0].message.startswith(
        "spec.submissionMode: 'Magic'"
    )
    assert [p.message for p in validate_rayjob(job(runtimeEnvYAML="- a list"))] == [
        "failed to unmarshal RuntimeEnvYAML: - a list: json: cannot unmarshal array into Go "
        "value of type utiltypes.RuntimeEnvType"
    ]
