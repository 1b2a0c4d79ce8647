"""KubeRay v1.7.0's OpenShift Route: its build, its name, and when it replaces the Ingress."""

from __future__ import annotations

from dataclasses import replace

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.route import build_head_route, route_name, uses_route

from ._fixtures import minimal_cluster, parse


def test_the_head_route_is_kuberay_s() -> None:
    cluster = minimal_cluster()
    cluster["metadata"]["annotations"] = {"haproxy.router.openshift.io/timeout": "5m"}
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [{"name": "dashboard", "containerPort": 8266}]
    assert build_head_route(parse(cluster)) == {
        "apiVersion": "route.openshift.io/v1",
        "kind": "Route",
        "metadata": {
            "name": "rc-head-route",
            "namespace": "ns",
            "labels": {
                "ray.io/cluster": "rc",
                "ray.io/identifier": "rc-head",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "annotations": {"haproxy.router.openshift.io/timeout": "5m"},
        },
        "spec": {
            "to": {"kind": "Service", "name": "rc-head-svc", "weight": 100},
            "port": {"targetPort": 8266},
            "wildcardPolicy": "None",
        },
    }


def test_the_dashboard_port_defaults_to_8265() -> None:
    assert build_head_route(parse(minimal_cluster()))["spec"]["port"] == {"targetPort": 8265}


def test_long_names_are_cut_to_fit_the_router_host() -> None:
    name = route_name("a" * 40, "namespace-x")  # 51 - 11 = 40 characters kept
    assert name == "a" * 40
    assert route_name("my-cluster", "ns") == "my-cluster-head-route"
    assert route_name("c" * 30, "n" * 30) == "c" * 21


def test_a_route_replaces_the_ingress_only_on_openshift_without_the_override() -> None:
    options = OperatorOptions()
    assert not uses_route(options)
    assert uses_route(replace(options, is_openshift=True))
    assert not uses_route(replace(options, is_openshift=True, use_ingress_on_openshift=True))
