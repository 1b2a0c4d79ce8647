"""Head, serve and headless services, the head Ingress and the autoscaler RBAC objects."""

from __future__ import annotations

import dataclasses

import pytest

from rayop.controllers.config.options import DEFAULT_OPTIONS
from rayop.controllers.raycluster.rbac import (
    build_autoscaler_role,
    build_autoscaler_role_binding,
    build_autoscaler_service_account,
)
from rayop.controllers.raycluster.services import (
    ServiceBuildError,
    build_head_ingress,
    build_head_service,
    build_headless_worker_service,
    build_serve_service,
    wants_headless_worker_service,
)

from ._fixtures import load_sample, minimal_cluster, parse

HEAD_LABELS = {
    "ray.io/cluster": "raycluster-kuberay",
    "ray.io/node-type": "head",
    "ray.io/identifier": "raycluster-kuberay-head",
    "app.kubernetes.io/name": "kuberay",
    "app.kubernetes.io/created-by": "kuberay-operator",
}


def test_sample_head_service_is_headless_with_sorted_tcp_ports() -> None:
    svc = build_head_service(load_sample("ray-cluster.sample.yaml"), options=DEFAULT_OPTIONS)
    assert svc["metadata"]["name"] == "raycluster-kuberay-head-svc"
    assert svc["metadata"]["namespace"] == "default"
    assert svc["metadata"]["labels"] == HEAD_LABELS
    assert svc["spec"]["selector"] == HEAD_LABELS
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert "type" not in svc["spec"]
    assert svc["spec"]["ports"] == [
        {"name": "client", "port": 10001, "appProtocol": "tcp"},
        {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
        {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
        {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
    ]
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def test_default_ports_when_head_has_none_and_unnamed_ports() -> None:
    cluster = minimal_cluster()
    svc = build_head_service(cluster, options=DEFAULT_OPTIONS)
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [
        ("client", 10001),
        ("dashboard", 8265),
        ("gcs-server", 6379),
        ("metrics", 8080),
        ("serve", 8000),
    ]
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 9000}
    ]
    names = [
        p["name"] for p in build_head_service(cluster, options=DEFAULT_OPTIONS)["spec"]["ports"]
    ]
    assert names == ["9000-port", "metrics"]


def test_cluster_ip_service_by_env_or_service_type() -> None:
    cluster = minimal_cluster()
    options = dataclasses.replace(DEFAULT_OPTIONS, enable_ray_head_cluster_ip_service=True)
    assert "clusterIP" not in build_head_service(cluster, options=options)["spec"]
    cluster["spec"]["headGroupSpec"]["serviceType"] = "NodePort"
    svc = build_head_service(cluster, options=DEFAULT_OPTIONS)
    assert svc["spec"]["type"] == "NodePort" and "clusterIP" not in svc["spec"]


def test_user_head_service_is_merged() -> None:
    cluster = minimal_cluster(headServiceAnnotations={"a": "from-spec"})
    cluster["spec"]["headGroupSpec"]["headService"] = {
        "metadata": {
            "name": "custom",
            "namespace": "elsewhere",
            "labels": {"ray.io/cluster": "x", "own": "1"},
            "annotations": {"a": "user", "b": "user"},
        },
        "spec": {"selector": {"app": "x"}, "ports": [{"name": "extra", "port": 1}]},
    }
    svc = build_head_service(cluster, options=DEFAULT_OPTIONS)
    assert svc["metadata"]["name"] == "custom" and svc["metadata"]["namespace"] == "ns"
    assert (
        svc["metadata"]["labels"]["ray.io/cluster"] == "rc"
        and svc["metadata"]["labels"]["own"] == "1"
    )
    assert svc["metadata"]["annotations"] == {"a": "from-spec", "b": "user"}
    assert (
        svc["spec"]["selector"]["ray.io/node-type"] == "head"
        and "app" not in svc["spec"]["selector"]
    )
    assert svc["spec"]["ports"][0] == {"name": "extra", "port": 1}
    assert "clusterIP" not in svc["spec"]


def test_serve_service() -> None:
    cluster = minimal_cluster()
    svc = build_serve_service(parse(cluster))
    assert svc["metadata"]["name"] == "rc-serve-svc"
    assert svc["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "rc",
        "ray.io/originated-from-crd": "RayCluster",
        "ray.io/serve": "rc-serve",
    }
    assert svc["spec"] == {
        "selector": {"ray.io/cluster": "rc"},
        "ports": [{"name": "serve", "port": 8000}],
    }
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "dashboard", "containerPort": 8265}
    ]
    with pytest.raises(ServiceBuildError, match="serve"):
        build_serve_service(parse(cluster))


def test_headless_worker_service_for_multi_host() -> None:
    cluster = load_sample("ray-cluster.tpu-v4-multihost.yaml")
    assert wants_headless_worker_service(parse(cluster))
    assert not wants_headless_worker_service(parse(load_sample("ray-cluster.sample.yaml")))
    svc = build_headless_worker_service(parse(cluster))
    name = cluster["metadata"]["name"]
    assert svc["metadata"]["name"] == f"{name}-headless"
    assert svc["metadata"]["labels"] == {"ray.io/headless-worker-svc": name}
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {"ray.io/cluster": name, "ray.io/node-type": "worker"},
        "type": "ClusterIP",
        "publishNotReadyAddresses": True,
    }


def test_head_ingress() -> None:
    cluster = minimal_cluster()
    cluster["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx", "x": "y"}
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    ingress = build_head_ingress(parse(cluster))
    assert ingress["metadata"]["name"] == "rc-head-ingress"
    assert ingress["metadata"]["annotations"] == {"x": "y"}
    assert ingress["spec"]["ingressClassName"] == "nginx"
    path = ingress["spec"]["rules"][0]["http"]["paths"][0]
    assert path == {
        "path": "/",
        "pathType": "Prefix",
        "backend": {"service": {"name": "rc-head-svc", "port": {"number": 8265}}},
    }


def test_autoscaler_rbac() -> None:
    cluster = minimal_cluster(enableInTreeAutoscaling=True)
    sa = build_autoscaler_service_account(parse(cluster))
    assert sa["metadata"]["name"] == "rc" and sa["metadata"]["namespace"] == "ns"
    role = build_autoscaler_role(parse(cluster))
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
        {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
    ]
    binding = build_autoscaler_role_binding(parse(cluster))
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rc", "namespace": "ns"}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "rc",
    }
