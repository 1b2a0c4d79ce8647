"""The cert-manager objects of a RayCluster with mTLS, and KubeRay's checks of ``tlsOptions``."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api.validation.raycluster import validate_raycluster
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.kit.gate_checks import raycluster_gate_problems
from rayop.controllers.raycluster.mtls import certificates as certs
from rayop.controllers.raycluster.mtls import names
from rayop.controllers.raycluster.pods import owner_reference

from ._fixtures import load_sample, minimal_cluster, parse

GATES = FeatureGates().with_overrides({"RayClusterMTLS": True})
UID = "0123456789abcdef"
FQDN = "raycluster-mtls-head-svc.default.svc.cluster.local"


def _rc() -> Any:
    return parse(load_sample("ray-cluster.mtls.yaml", uid=UID))


def _labels(component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
        "app.kubernetes.io/component": component,
        "ray.io/cluster": "raycluster-mtls",
    }


def test_names_are_kuberays() -> None:
    assert names.self_signed_issuer_name("c") == "ray-selfsigned-issuer-c"
    assert names.ca_issuer_name("c") == "ray-ca-issuer-c"
    assert names.ca_cert_name("c") == "ray-ca-certificate-c"
    assert names.ca_secret_name("c", UID) == "c-ca-secret-01234567"
    assert names.cert_name("c", "head") == "ray-head-cert-c"
    assert names.cert_name("c", "worker") == "ray-worker-cert-c"
    assert names.secret_name("c", "head") == "ray-head-secret-c"
    assert names.secret_name("c", "worker") == "ray-worker-secret-c"


def test_the_issuers() -> None:
    rc = _rc()
    owner = owner_reference(rc)
    self_signed = certs.build_self_signed_issuer(rc, owner)
    assert self_signed["metadata"]["labels"] == _labels("selfsigned-issuer")
    assert self_signed["metadata"]["ownerReferences"] == [owner]
    assert self_signed["spec"] == {"selfSigned": {}}
    ca = certs.build_ca_issuer(rc, owner)
    assert ca["metadata"]["name"] == "ray-ca-issuer-raycluster-mtls"
    assert ca["spec"] == {"ca": {"secretName": "raycluster-mtls-ca-secret-01234567"}}


def test_the_ca_certificate() -> None:
    cert = certs.build_ca_certificate(_rc(), {})
    assert cert["metadata"]["labels"] == _labels("ca-certificate")
    assert cert["spec"] == {
        "secretName": "raycluster-mtls-ca-secret-01234567",
        "isCA": True,
        "commonName": "ray-ca-raycluster-mtls",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": "87600h0m0s",
        "renewBefore": "720h0m0s",
        "usages": ["cert sign", "crl sign"],
        "issuerRef": {
            "name": "ray-selfsigned-issuer-raycluster-mtls",
            "kind": "Issuer",
            "group": "cert-manager.io",
        },
    }


def test_the_leaf_certificates_list_their_own_pods_ips_only() -> None:
    rc = _rc()
    head = certs.build_leaf_certificate(
        rc, "head", {}, ips=["10.0.0.9", "", "10.0.0.9"], head_fqdn=FQDN
    )
    assert head["metadata"]["name"] == "ray-head-cert-raycluster-mtls"
    assert head["metadata"]["labels"] == _labels("head-certificate")
    assert head["spec"] == {
        "secretName": "ray-head-secret-raycluster-mtls",
        "duration": "2160h0m0s",
        "renewBefore": "360h0m0s",
        "dnsNames": sorted(["localhost", FQDN]),
        "ipAddresses": ["10.0.0.9", "127.0.0.1"],
        "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
        "issuerRef": {
            "name": "ray-ca-issuer-raycluster-mtls",
            "kind": "Issuer",
            "group": "cert-manager.io",
        },
    }
    worker = certs.build_leaf_certificate(rc, "worker", {}, ips=[], head_fqdn=FQDN)
    assert worker["spec"]["dnsNames"] == ["localhost"]
    assert worker["spec"]["ipAddresses"] == ["127.0.0.1"]
    assert worker["spec"]["secretName"] == "ray-worker-secret-raycluster-mtls"


def test_an_update_is_needed_only_when_labels_or_sans_differ_as_sets() -> None:
    desired = certs.build_leaf_certificate(_rc(), "worker", {}, ips=["10.0.0.2"], head_fqdn=FQDN)
    live: dict[str, Any] = {
        "metadata": {"labels": dict(desired["metadata"]["labels"])},
        "spec": {"dnsNames": ["localhost"], "ipAddresses": ["127.0.0.1", "10.0.0.2"]},
    }
    assert not certs.leaf_needs_update(live, desired)
    live["spec"]["ipAddresses"] = ["127.0.0.1"]
    assert certs.leaf_needs_update(live, desired)
    live["spec"]["ipAddresses"] = ["127.0.0.1", "10.0.0.2"]
    live["metadata"]["labels"]["extra"] = "x"
    assert certs.leaf_needs_update(live, desired)


@pytest.mark.parametrize(
    ("status", "generation", "ready"),
    [
        ({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}]}, 2, True),
        ({"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}, 2, False),
        ({"conditions": [{"type": "Ready", "status": "False", "observedGeneration": 2}]}, 2, False),
        ({}, 1, False),
    ],
)
def test_ready_means_ready_at_the_current_generation(
    status: dict[str, Any], generation: int, ready: bool
) -> None:
    cert = {"metadata": {"generation": generation}, "status": status}
    assert certs.is_certificate_ready(cert) is ready


def test_pod_ips_skip_terminating_finished_and_unassigned_pods() -> None:
    pods = [
        {"status": {"podIP": "10.0.0.1", "phase": "Running"}},
        {"status": {"podIP": "10.0.0.2", "phase": "Succeeded"}},
        {"status": {"podIP": "10.0.0.3", "phase": "Failed"}},
        {"metadata": {"deletionTimestamp": "x"}, "status": {"podIP": "10.0.0.4"}},
        {"status": {"phase": "Pending"}},
    ]
    assert certs.pod_ips(pods) == ["10.0.0.1"]


def _problem(**spec: Any) -> str:
    problems = validate_raycluster(parse(minimal_cluster(**spec)), gates=GATES.by_name())
    return problems[0].message if problems else ""


def _with_head_env(name: str) -> dict[str, Any]:
    cluster = minimal_cluster(tlsOptions={"enabled": True})
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head.setdefault("env", []).append({"name": name, "value": "x"})
    return cluster


@pytest.mark.parametrize("name", names.TLS_ENV_NAMES)
def test_a_head_setting_a_managed_tls_env_var_is_refused(name: str) -> None:
    (problem,) = validate_raycluster(parse(_with_head_env(name)), gates=GATES.by_name())
    assert problem.message == (
        f"cannot set {name} environment variable in head Pod when tlsOptions is set "
        "- the operator manages TLS configuration automatically"
    )


def test_a_worker_mount_at_the_tls_path_is_refused() -> None:
    cluster = minimal_cluster(tlsOptions={"enabled": True})
    group = cluster["spec"]["workerGroupSpecs"][0]
    worker = group["template"]["spec"]["containers"][0]
    worker["volumeMounts"] = [{"name": "mine", "mountPath": "/etc/ray/tls"}]
    (problem,) = validate_raycluster(parse(cluster), gates=GATES.by_name())
    assert problem.message == (
        f'cannot use volume mount at path "/etc/ray/tls" in worker group "{group["groupName"]}" '
        "when tlsOptions is set - the operator manages TLS configuration automatically"
    )


def test_autoscaler_options_may_not_set_tls_env_or_the_tls_volume() -> None:
    options = {"env": [{"name": "RAY_USE_TLS", "value": "0"}]}
    assert _problem(tlsOptions={"enabled": True}, autoscalerOptions=options) == (
        "cannot set RAY_USE_TLS environment variable in autoscalerOptions.env when tlsOptions "
        "is set - the operator manages TLS configuration for the autoscaler automatically"
    )
    mounts = {"volumeMounts": [{"name": "ray-tls", "mountPath": "/x"}]}
    assert _problem(tlsOptions={"enabled": True}, autoscalerOptions=mounts) == (
        'cannot use volume mount named "ray-tls" in autoscalerOptions.volumeMounts when '
        "tlsOptions is set - the operator manages TLS configuration automatically"
    )


def test_tls_disabled_skips_the_checks_and_the_gate_off_refuses_any_tls_options() -> None:
    cluster = _with_head_env("RAY_USE_TLS")
    cluster["spec"]["tlsOptions"] = {"enabled": False}
    assert validate_raycluster(parse(cluster), gates=GATES.by_name()) == []
    assert raycluster_gate_problems(cluster, FeatureGates()) == [
        "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"
    ]


def test_the_mtls_sample_passes_the_gate_checks_with_the_gate_on() -> None:
    assert raycluster_gate_problems(load_sample("ray-cluster.mtls.yaml"), GATES) == []
