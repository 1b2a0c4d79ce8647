"""RayCluster validation: each KubeRay v1.7 check refuses with KubeRay's exact message and reason."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.api.common import Condition, ConditionStatus
from rayop.api.raycluster import RayCluster, RayClusterStatus
from rayop.api.validation import (
    Reason,
    validate_raycluster,
    validate_raycluster_status,
    validate_rayjob,
    validate_rayservice,
)

Obj = dict[str, Any]
CONTAINERS = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}


def cluster(**spec: Any) -> Obj:
    """Returns a usable RayCluster (one worker group "small") with ``spec`` fields replaced."""
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


def head_env(c: Obj, *env: tuple[str, str]) -> Obj:
    """Sets the env of the head's Ray container; returns ``c``."""
    container = c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": n, "value": v} for n, v in env]
    return c


def worker(c: Obj) -> Obj:
    group: Obj = c["spec"]["workerGroupSpecs"][0]
    return group


def test_a_plain_cluster_has_no_problems() -> None:
    assert validate_raycluster(cluster()) == []
    assert validate_raycluster(RayCluster.model_validate(cluster())) == []


def test_every_sample_is_valid(compat_dir: Path) -> None:
    validators: dict[str, Callable[[Obj], list[Any]]] = {
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


V2 = {"enableInTreeAutoscaling": True, "autoscalerOptions": {"version": "v2"}}
DNS1035 = (
    "[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"
)


def _edit(fn: Callable[[Obj], object]) -> Callable[[Obj], None]:
    def apply(c: Obj) -> None:
        fn(c)

    return apply


SPEC_CASES: dict[str, tuple[Callable[[Obj], None], str]] = {
    "no head container": (
        _edit(lambda c: c["spec"]["headGroupSpec"].update(template={"spec": {"containers": []}})),
        "headGroupSpec should have at least one container",
    ),
    "head resources twice": (
        _edit(
            lambda c: c["spec"]["headGroupSpec"].update(
                rayStartParams={"num-cpus": "1"}, resources={"CPU": "1"}
            )
        ),
        "resource fields should not be set in both rayStartParams and Resources for Head group; "
        "please use only one",
    ),
    "worker resources twice": (
        _edit(
            lambda c: worker(c).update(rayStartParams={"resources": "{}"}, resources={"TPU": "4"})
        ),
        "resource fields should not be set in both rayStartParams and Resources for small group; "
        "please use only one",
    ),
    "labels in rayStartParams": (
        _edit(lambda c: worker(c).update(rayStartParams={"labels": "a=b"})),
        "rayStartParams['labels'] is not supported for small group; please use the top-level "
        "Labels field instead",
    ),
    "invalid label key and value": (
        _edit(lambda c: c["spec"]["headGroupSpec"].update(labels={"a b": "x y"})),
        "invalid label key for Head group: 'a b', error: name part must consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'); invalid label value for key 'a b' in Head "
        "group: 'x y', error: a valid label must be an empty string or consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    "no worker container": (
        _edit(lambda c: worker(c).update(template={"spec": {"containers": []}})),
        "workerGroupSpec should have at least one container",
    ),
    "negative minReplicas": (
        _edit(lambda c: worker(c).update(minReplicas=-1)),
        "worker group small has negative minReplicas -1",
    ),
    "negative maxReplicas": (
        _edit(lambda c: worker(c).update(minReplicas=0, maxReplicas=-2)),
        "worker group small has negative maxReplicas -2",
    ),
    "min over max": (
        _edit(lambda c: worker(c).update(minReplicas=5, maxReplicas=2)),
        "worker group small has minReplicas 5 greater than maxReplicas 2",
    ),
    "negative idle timeout": (
        _edit(lambda c: worker(c).update(idleTimeoutSeconds=-1)),
        "worker group small: idleTimeoutSeconds must be non-negative, got -1",
    ),
    "idle timeout without v2": (
        _edit(lambda c: worker(c).update(idleTimeoutSeconds=60)),
        "worker group small: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please "
        "set .spec.autoscalerOptions.version to 'v2' (or set RAY_enable_autoscaler_v2 "
        "environment variable to 'true' in the head pod if using KubeRay < 1.4.0)",
    ),
    "priority without a Ray version": (
        _edit(lambda c: worker(c).update(priority=3)),
        "worker group small: priority is set, but RayVersion was not specified. Ray version "
        "2.56.0 or later is required",
    ),
    "priority on an old Ray": (
        _edit(lambda c: (worker(c).update(priority=3), c["spec"].update(rayVersion="2.55.1"))),
        "worker group small: priority is set, but minimum Ray version is 2.56.0, got 2.55.1",
    ),
    "priority without v2": (
        _edit(lambda c: (worker(c).update(priority=3), c["spec"].update(rayVersion="2.56.0"))),
        "worker group small: priority is set to 3, but autoscaler v2 is not enabled. Priority is "
        "only supported with autoscaler v2 enabled",
    ),
    "ft annotation and options": (
        _edit(
            lambda c: (
                c["metadata"].update(annotations={"ray.io/ft-enabled": "true"}),
                c["spec"].update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
            )
        ),
        "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only "
        "GcsFaultToleranceOptions to configure GCS fault tolerance",
    ),
    "redis address env without ft": (
        _edit(lambda c: head_env(c, ("RAY_REDIS_ADDRESS", "redis:6379"))),
        "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but "
        "GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS "
        "fault tolerance",
    ),
    "redis-password param with ft": (
        _edit(
            lambda c: (
                c["spec"]["headGroupSpec"].update(rayStartParams={"redis-password": "x"}),
                c["spec"].update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
            )
        ),
        "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled "
        "- use GcsFaultToleranceOptions.RedisPassword instead",
    ),
    "REDIS_PASSWORD env with ft": (
        _edit(
            lambda c: (
                head_env(c, ("REDIS_PASSWORD", "x")),
                c["spec"].update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
            )
        ),
        "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled "
        "- use GcsFaultToleranceOptions.RedisPassword instead",
    ),
    "RAY_REDIS_ADDRESS env with ft": (
        _edit(
            lambda c: (
                head_env(c, ("RAY_REDIS_ADDRESS", "r:1")),
                c["spec"].update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
            )
        ),
        "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is "
        "enabled - use GcsFaultToleranceOptions.RedisAddress instead",
    ),
    "external storage annotation with ft": (
        _edit(
            lambda c: (
                c["metadata"].update(annotations={"ray.io/external-storage-namespace": "ns"}),
                c["spec"].update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
            )
        ),
        "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions "
        "is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
    ),
    "storage with the redis backend": (
        _edit(
            lambda c: c["spec"].update(
                gcsFaultToleranceOptions={"redisAddress": "r:1", "storage": {"size": "1Gi"}}
            )
        ),
        "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies "
        "to the 'rocksdb' backend",
    ),
    "redis username param": (
        _edit(lambda c: c["spec"]["headGroupSpec"].update(rayStartParams={"redis-username": "u"})),
        "cannot set redis username in rayStartParams or environment variables - use "
        "GcsFaultToleranceOptions.RedisUsername instead",
    ),
    "v2 env without autoscaling": (
        _edit(lambda c: head_env(c, ("RAY_enable_autoscaler_v2", "true"))),
        "environment variable RAY_enable_autoscaler_v2 cannot be set to 'true' when "
        "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use "
        "autoscaler v2",
    ),
    "suspended group with autoscaling": (
        _edit(
            lambda c: (
                c["spec"].update(enableInTreeAutoscaling=True),
                worker(c).update(suspend=True),
            )
        ),
        "worker group small cannot be suspended with Autoscaler enabled",
    ),
    "v2 by version and env": (
        _edit(lambda c: (c["spec"].update(V2), head_env(c, ("RAY_enable_autoscaler_v2", "1")))),
        "both .spec.autoscalerOptions.version and head Pod env var RAY_enable_autoscaler_v2 are "
        "set, please only use the former",
    ),
    "v2 head restartPolicy": (
        _edit(
            lambda c: (
                c["spec"].update(V2),
                c["spec"]["headGroupSpec"]["template"]["spec"].update(restartPolicy="Always"),
            )
        ),
        "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
    ),
    "v2 worker restartPolicy": (
        _edit(
            lambda c: (
                c["spec"].update(V2),
                worker(c)["template"]["spec"].update(restartPolicy="OnFailure"),
            )
        ),
        "restartPolicy for worker group small should be Never or unset when using autoscaler V2",
    ),
    "negative autoscaler idle timeout": (
        _edit(lambda c: c["spec"].update(autoscalerOptions={"idleTimeoutSeconds": -5})),
        "autoscalerOptions.idleTimeoutSeconds must be non-negative, got -5",
    ),
    "forbidden autoscaler env": (
        _edit(
            lambda c: c["spec"].update(
                autoscalerOptions={"env": [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD"}]}
            )
        ),
        "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: it is managed "
        "by KubeRay and injected automatically into the autoscaler container",
    ),
    "token auth without a Ray version": (
        _edit(lambda c: c["spec"].update(authOptions={"mode": "token"})),
        "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or "
        "later is required",
    ),
    "token auth with a bad Ray version": (
        _edit(lambda c: c["spec"].update(authOptions={"mode": "token"}, rayVersion="latest")),
        "authOptions.mode is 'token' but RayVersion format is invalid: latest, could not parse "
        '"latest" as version',
    ),
    "token auth on an old Ray": (
        _edit(lambda c: c["spec"].update(authOptions={"mode": "token"}, rayVersion="2.46.0")),
        "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.46.0",
    ),
    "k8s token auth on an old Ray": (
        _edit(
            lambda c: c["spec"].update(
                authOptions={"mode": "token", "enableK8sTokenAuth": True}, rayVersion="2.54.0"
            )
        ),
        "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.54.0",
    ),
    "k8s token auth with a secret": (
        _edit(
            lambda c: c["spec"].update(
                authOptions={"mode": "token", "enableK8sTokenAuth": True, "secretName": "s"},
                rayVersion="2.55.0",
            )
        ),
        "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
    ),
    "k8s token auth without token mode": (
        _edit(lambda c: c["spec"].update(authOptions={"enableK8sTokenAuth": True})),
        "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'",
    ),
}


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_kuberay_spec_checks_refuse_with_kuberays_message(case: str) -> None:
    edit, expected = SPEC_CASES[case]
    c = cluster()
    edit(c)
    problems = validate_raycluster(c)
    assert [(p.reason, p.message) for p in problems] == [(Reason.INVALID_RAYCLUSTER_SPEC, expected)]
    assert problems[0].event_message("default", "demo") == (
        f"The RayCluster spec is invalid default/demo: {expected}"
    )


def test_the_first_failing_check_is_the_answer_as_in_kuberay() -> None:
    c = cluster(authOptions={"mode": "token"})
    worker(c).update(minReplicas=5, maxReplicas=2)
    assert [p.message for p in validate_raycluster(c)] == [
        "worker group small has minReplicas 5 greater than maxReplicas 2"
    ]


def test_embedded_rocksdb_rules_apply_only_with_their_gate_on() -> None:
    c = cluster(gcsFaultToleranceOptions={"backend": "rocksdb", "redisAddress": "r:1"})
    assert validate_raycluster(c) == []  # the gate check refuses it, naming the gate
    gates = {"GCSFaultToleranceEmbeddedStorage": True}
    assert [p.message for p in validate_raycluster(c, gates=gates)] == [
        "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'"
    ]
    c = cluster(gcsFaultToleranceOptions={"backend": "rocksdb"})
    c["spec"]["headGroupSpec"]["template"]["spec"]["volumes"] = [{"name": "gcs-storage"}]
    assert [p.message for p in validate_raycluster(c, gates=gates)] == [
        'cannot set a volume named "gcs-storage" in the head Pod when the embedded GCS FT '
        "backend is used - it is managed by KubeRay"
    ]
    c = cluster(
        gcsFaultToleranceOptions={
            "backend": "rocksdb",
            "storage": {"claimName": "mine", "size": "1Gi"},
        }
    )
    assert [p.message for p in validate_raycluster(c, gates=gates)] == [
        "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, "
        "storageClassName, and accessModes"
    ]


def test_metadata_is_checked_first_with_its_own_reason() -> None:
    c = cluster(authOptions={"mode": "token"})
    c["metadata"]["name"] = "x" * 54
    (problem,) = validate_raycluster(c)
    assert problem.reason == Reason.INVALID_RAYCLUSTER_METADATA
    assert problem.message == "RayCluster name should be no more than 53 characters"
    assert problem.event_message("ns", "n") == (
        "The RayCluster metadata is invalid ns/n: RayCluster name should be no more than 53 "
        "characters"
    )
    c["metadata"]["name"] = "Demo_1"
    assert [p.message for p in validate_raycluster(c)] == [
        f"RayCluster name should be a valid DNS1035 label: {DNS1035}"
    ]
    c["metadata"]["name"] = "a" * 53
    assert [p.message for p in validate_raycluster(cluster() | {"metadata": c["metadata"]})] == []


def test_upgrade_strategy_on_a_cluster_made_by_a_rayjob() -> None:
    c = cluster(upgradeStrategy={"type": "Recreate"})
    c["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayJob"}
    (problem,) = validate_raycluster(c)
    assert problem.message == "upgradeStrategy cannot be set when RayCluster is created by RayJob"
    assert problem.event_message("ns", "n") == (
        "The RayCluster UpgradeStrategy is invalid ns/n: upgradeStrategy cannot be set when "
        "RayCluster is created by RayJob"
    )


def test_rayops_own_checks_follow_kuberays() -> None:
    c = cluster()
    c["spec"]["workerGroupSpecs"].append(copy.deepcopy(worker(c)))
    worker(c).update(numOfHosts=0)
    assert [p.message for p in validate_raycluster(c)] == [
        "spec.workerGroupSpecs[0].numOfHosts: 0 is less than 1",
        "spec.workerGroupSpecs[1].groupName: 'small' is used by another group",
    ]
    assert [p.message for p in validate_raycluster(cluster(gcsFaultToleranceOptions={}))] == [
        "spec.gcsFaultToleranceOptions.redisAddress: required by the redis backend"
    ]
    broken = cluster()
    broken["spec"].pop("headGroupSpec")
    assert [p.message for p in validate_raycluster(broken)] == [
        "spec.headGroupSpec: Field required"
    ]


def test_escaped_resources_param_is_accepted_and_garbage_is_named() -> None:
    c = cluster()
    c["spec"]["headGroupSpec"]["rayStartParams"] = {"resources": '"{\\"TPU\\": 4}"'}
    worker(c)["rayStartParams"] = {"resources": "{TPU: four}"}
    assert [p.message for p in validate_raycluster(c)] == [
        "spec.workerGroupSpecs[0].rayStartParams.resources: '{TPU: four}' is not a JSON object"
    ]


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
    (problem,) = validate_raycluster_status(status)
    assert problem.reason == Reason.INVALID_RAYCLUSTER_STATUS
    assert problem.event_message("ns", "n") == (
        "The RayCluster status is invalid ns/n, invalid RayCluster State: "
        "rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both "
        "true"
    )
