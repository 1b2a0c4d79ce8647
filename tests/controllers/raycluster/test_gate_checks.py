"""KubeRay v1.7's feature gates: defaults, overrides by name, and the spec fields they guard."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rayop.controllers.config.gates import FEATURE_GATE_FIELDS, FeatureGates
from rayop.controllers.kit.gate_checks import (
    raycluster_gate_problems,
    rayjob_gate_problems,
    rayservice_gate_problems,
)

from ._fixtures import load_sample, minimal_cluster

DEFAULTS = FeatureGates()
ALL_ON = FeatureGates().with_overrides(dict.fromkeys(FEATURE_GATE_FIELDS, True))


def test_every_kuberay_gate_exists_with_kuberays_default() -> None:
    assert DEFAULTS.by_name() == {
        "RayClusterStatusConditions": True,
        "RayJobDeletionPolicy": True,
        "RayMultiHostIndexing": True,
        "RayServiceIncrementalUpgrade": True,
        "RayCronJob": False,
        "SidecarSubmitterRestart": False,
        "RayClusterNetworkPolicy": False,
        "GCSFaultToleranceEmbeddedStorage": False,
        "RayClusterMTLS": False,
        "RayClusterHistoryServer": False,
        "KubernetesWAS": False,
    }
    assert set(FEATURE_GATE_FIELDS.values()) == {f.name for f in dataclasses.fields(FeatureGates)}


def test_overrides_by_kuberay_name_and_unknown_names_are_refused() -> None:
    gates = DEFAULTS.with_overrides({"RayClusterMTLS": True, "RayJobDeletionPolicy": False})
    assert gates.ray_cluster_mtls is True and gates.ray_job_deletion_policy is False
    assert gates.ray_cluster_status_conditions is True  # untouched
    with pytest.raises(ValueError, match="unrecognized feature gate: RayClusterMtls"):
        DEFAULTS.with_overrides({"RayClusterMtls": True})


@pytest.mark.parametrize(
    ("sample", "gate", "kuberay_message"),
    [
        (
            "ray-cluster.historyserver.yaml",
            "RayClusterHistoryServer",
            "RayClusterHistoryServer feature gate is not enabled",
        ),
        (
            "ray-cluster.network-policy-deny-all.yaml",
            "RayClusterNetworkPolicy",
            "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
        ),
    ],
)
def test_honoured_gated_samples_are_refused_with_their_gate_off_only(
    sample: str, gate: str, kuberay_message: str
) -> None:
    cluster = load_sample(sample)
    assert raycluster_gate_problems(cluster, DEFAULTS) == [kuberay_message]
    assert raycluster_gate_problems(cluster, DEFAULTS.with_overrides({gate: True})) == []


def test_mtls_sample_is_refused_with_its_gate_off_only() -> None:
    cluster = load_sample("ray-cluster.mtls.yaml")
    assert raycluster_gate_problems(cluster, DEFAULTS) == [
        "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"
    ]
    assert raycluster_gate_problems(cluster, ALL_ON) == []


def test_ungated_sample_passes_with_default_gates() -> None:
    assert raycluster_gate_problems(load_sample("ray-cluster.sample.yaml"), DEFAULTS) == []


def test_tls_options_are_gated_even_when_disabled() -> None:
    cluster = minimal_cluster(tlsOptions={"enabled": False})
    assert "RayClusterMTLS" in raycluster_gate_problems(cluster, DEFAULTS)[0]


def test_enabled_mtls_is_accepted_with_its_gate_on() -> None:
    cluster = minimal_cluster(tlsOptions={"enabled": True})
    assert raycluster_gate_problems(cluster, ALL_ON) == []


@pytest.mark.parametrize("tls_options", [{"enabled": False}, {}])
def test_tls_options_not_enabling_tls_are_accepted_with_the_gate_on(
    tls_options: dict[str, Any],
) -> None:
    cluster = minimal_cluster(tlsOptions=tls_options)
    assert raycluster_gate_problems(cluster, ALL_ON) == []


def test_embedded_gcs_ft_needs_its_gate_but_redis_does_not() -> None:
    rocksdb = minimal_cluster(gcsFaultToleranceOptions={"backend": "rocksdb"})
    assert raycluster_gate_problems(rocksdb, DEFAULTS) == [
        "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: "
        "'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
    ]
    assert raycluster_gate_problems(rocksdb, ALL_ON) == []
    redis = minimal_cluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    assert raycluster_gate_problems(redis, DEFAULTS) == []


def test_suspended_worker_group_needs_the_deletion_policy_gate() -> None:
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["suspend"] = True
    assert raycluster_gate_problems(cluster, DEFAULTS) == []  # beta: on by default
    off = DEFAULTS.with_overrides({"RayJobDeletionPolicy": False})
    group = cluster["spec"]["workerGroupSpecs"][0]["groupName"]
    assert raycluster_gate_problems(cluster, off) == [
        f"worker group {group} can be suspended only when the RayJobDeletionPolicy feature "
        "gate is enabled"
    ]


def _cluster_spec(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = minimal_cluster(**extra)["spec"]
    return spec


def test_rayjob_deletion_strategy_and_embedded_cluster_spec_are_checked() -> None:
    rayjob = {
        "spec": {
            "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}},
            "rayClusterSpec": _cluster_spec(networkPolicy={"mode": "DenyAll"}),
        }
    }
    assert rayjob_gate_problems(rayjob, DEFAULTS) == [
        "The RayJob spec is invalid: spec.networkPolicy requires the RayClusterNetworkPolicy "
        "feature gate to be enabled"
    ]
    off = ALL_ON.with_overrides({"RayJobDeletionPolicy": False})
    assert rayjob_gate_problems(rayjob, off) == [
        "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
    ]
    assert rayjob_gate_problems({"spec": {"clusterSelector": {"ray.io/cluster": "c"}}}, off) == []


def test_rayservice_cluster_config_is_checked() -> None:
    rayservice = {"spec": {"rayClusterConfig": _cluster_spec(historyServerOptions={})}}
    assert rayservice_gate_problems(rayservice, DEFAULTS) == [
        "The RayService spec is invalid: RayClusterHistoryServer feature gate is not enabled"
    ]
    assert rayservice_gate_problems(rayservice, ALL_ON) == []
    mtls = {"spec": {"rayClusterConfig": _cluster_spec(tlsOptions={"enabled": True})}}
    assert rayservice_gate_problems(mtls, ALL_ON) == []
    tls = {"spec": {"rayClusterConfig": _cluster_spec(tlsOptions={"enabled": False})}}
    assert rayservice_gate_problems(tls, ALL_ON) == []
