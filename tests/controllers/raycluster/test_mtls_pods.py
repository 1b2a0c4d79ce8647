"""The TLS settings of head and worker pods with mTLS on (KubeRay v1.7.0's ``configureTLS``)."""

from __future__ import annotations

from typing import Any

from rayop.api.validation.raycluster import validate_raycluster
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.mtls.pod_tls import WAIT_SCRIPT

from ._fixtures import env_of, head_pod, load_sample, minimal_cluster, parse, worker_pod

MTLS = OperatorOptions(feature_gates=FeatureGates().with_overrides({"RayClusterMTLS": True}))
TLS_ENV = {
    "RAY_USE_TLS": "1",
    "RAY_TLS_SERVER_CERT": "/etc/ray/tls/tls.crt",
    "RAY_TLS_SERVER_KEY": "/etc/ray/tls/tls.key",
    "RAY_TLS_CA_CERT": "/etc/ray/tls/ca.crt",
}
MOUNT = {"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": True}


def _sample() -> dict[str, Any]:
    return load_sample("ray-cluster.mtls.yaml")


def _has_tls(container: dict[str, Any]) -> bool:
    env = env_of(container)
    return all(env.get(k) == v for k, v in TLS_ENV.items()) and MOUNT in container["volumeMounts"]


def test_the_head_mounts_the_head_secret_and_waits_for_its_ip_san() -> None:
    pod = head_pod(_sample(), options=MTLS)
    spec = pod["spec"]
    assert {"name": "ray-tls", "secret": {"secretName": "ray-head-secret-raycluster-mtls"}} in spec[
        "volumes"
    ]
    assert _has_tls(spec["containers"][0])
    (init,) = spec["initContainers"]
    assert init["name"] == "wait-for-tls-ip-san"
    assert init["image"] == "rayproject/ray:2.55.1"
    assert init["command"] == ["sh", "-c"] and init["args"] == [WAIT_SCRIPT]
    assert init["env"][0] == {
        "name": "POD_IP",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    }
    assert [e["name"] for e in init["env"][1:]] == ["FQ_RAY_IP", "RAY_IP"]  # BuildPod's, after
    assert init["volumeMounts"] == [MOUNT]
    small = {"cpu": "50m", "memory": "64Mi"}
    assert init["resources"] == {"limits": small, "requests": small}
    assert 'grep -qE "IP Address:${POD_IP}([^0-9.]|$)"' in WAIT_SCRIPT


def test_a_worker_mounts_the_worker_secret_before_wait_gcs_ready_gets_tls() -> None:
    cluster = _sample()
    pod = worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], options=MTLS)
    spec = pod["spec"]
    assert {"name": "ray-tls", "secret": {"secretName": "ray-worker-secret-raycluster-mtls"}} in (
        spec["volumes"]
    )
    assert [i["name"] for i in spec["initContainers"]] == ["wait-for-tls-ip-san", "wait-gcs-ready"]
    assert _has_tls(spec["initContainers"][1])
    assert _has_tls(spec["containers"][0])


def test_the_tls_env_comes_before_the_ray_env_kuberay_adds_later() -> None:
    names = [e["name"] for e in head_pod(_sample(), options=MTLS)["spec"]["containers"][0]["env"]]
    tls = [n for n in names if n.startswith("RAY_USE_TLS") or n.startswith("RAY_TLS_")]
    assert tls == list(TLS_ENV)
    assert names.index("RAY_TLS_CA_CERT") < names.index("RAY_CLUSTER_NAME")


def test_the_autoscaler_sidecar_gets_tls_env_and_mount() -> None:
    cluster = _sample()
    cluster["spec"]["enableInTreeAutoscaling"] = True
    containers = head_pod(cluster, options=MTLS)["spec"]["containers"]
    (sidecar,) = [c for c in containers if c["name"] == "autoscaler"]
    assert _has_tls(sidecar)


def test_a_user_init_container_is_left_alone_and_the_wait_comes_first() -> None:
    cluster = _sample()
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["initContainers"] = [
        {"name": "mine", "image": "busybox"}
    ]
    inits = head_pod(cluster, options=MTLS)["spec"]["initContainers"]
    assert [i["name"] for i in inits] == ["wait-for-tls-ip-san", "mine"]
    assert "RAY_USE_TLS" not in env_of(inits[1])


def test_the_security_context_and_pull_policy_of_ray_are_copied_to_the_wait() -> None:
    cluster = _sample()
    ray = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    ray["imagePullPolicy"] = "Always"
    ray["securityContext"] = {"runAsUser": 1000}
    (init,) = head_pod(cluster, options=MTLS)["spec"]["initContainers"]
    assert init["imagePullPolicy"] == "Always" and init["securityContext"] == {"runAsUser": 1000}


def test_tls_off_or_gate_off_adds_nothing() -> None:
    for cluster, options in (
        (_sample(), OperatorOptions()),
        (minimal_cluster(tlsOptions={"enabled": False}), MTLS),
    ):
        pod = head_pod(cluster, options=options)
        assert "RAY_USE_TLS" not in env_of(pod["spec"]["containers"][0])
        assert not any(v["name"] == "ray-tls" for v in pod["spec"].get("volumes", []))


def test_the_sample_is_valid_with_the_gate_on() -> None:
    gates = MTLS.feature_gates.by_name()
    assert validate_raycluster(parse(_sample()), gates=gates) == []
