"""The head and serve Services a RayService owns."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api.rayservice import RayService
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayservice import service_builders as sb
from rayop.controllers.rayservice.cluster_builders import build_ray_cluster


def _service(
    serve_service: dict[str, Any] | None = None, ports: list[Any] | None = None
) -> RayService:
    head: dict[str, Any] = {"name": "h", "image": "ray"}
    if ports is not None:
        head["ports"] = ports
    spec: dict[str, Any] = {
        "rayClusterConfig": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
            "workerGroupSpecs": [],
        }
    }
    if serve_service is not None:
        spec["serveService"] = serve_service
    return RayService.model_validate(
        {"metadata": {"name": "svc", "namespace": "ns", "uid": "u"}, "spec": spec}
    )


def _cluster(svc: RayService) -> dict[str, Any]:
    goal = svc.spec.ray_cluster_config.model_dump(by_alias=True, exclude_none=True)
    cluster = build_ray_cluster(svc, goal, "svc-aaaaa")
    cluster["metadata"]["uid"] = "cu"
    return cluster


def test_serve_service_selects_serving_pods_of_one_cluster() -> None:
    svc = _service()
    serve = sb.build_rayservice_serve_service(svc, _cluster(svc))
    assert serve["metadata"]["name"] == "svc-serve-svc"
    assert serve["spec"]["selector"] == {"ray.io/cluster": "svc-aaaaa", "ray.io/serve": "true"}
    assert serve["spec"]["ports"] == [{"name": "serve", "port": 8000}]
    assert serve["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayService"
    assert serve["metadata"]["ownerReferences"][0]["kind"] == "RayService"
    assert sb.selected_cluster(serve) == "svc-aaaaa"


def test_custom_serve_service_keeps_name_labels_type_and_ports() -> None:
    custom = {
        "metadata": {"name": "custom", "labels": {"x": "y"}},
        "spec": {"type": "LoadBalancer", "ports": [{"name": "p", "port": 12345}]},
    }
    svc = _service(custom)
    serve = sb.build_rayservice_serve_service(svc, _cluster(svc))
    assert sb.serve_service_name(svc) == "custom" == serve["metadata"]["name"]
    assert serve["metadata"]["labels"]["x"] == "y"
    assert serve["spec"]["type"] == "LoadBalancer"
    assert serve["spec"]["ports"] == [{"name": "p", "port": 12345}]


def test_no_serve_port_is_an_error() -> None:
    svc = _service(ports=[{"name": "dashboard", "containerPort": 8265}])
    with pytest.raises(sb.ServiceBuildError):
        sb.build_rayservice_serve_service(svc, _cluster(svc))


def test_head_service_is_renamed_and_relabelled_but_selects_the_cluster_head() -> None:
    svc = _service()
    head = sb.build_rayservice_head_service(svc, _cluster(svc), options=OperatorOptions())
    assert head["metadata"]["name"] == "svc-head-svc"
    assert head["metadata"]["labels"]["ray.io/identifier"] == "svc-head"
    assert head["spec"]["selector"]["ray.io/cluster"] == "svc-aaaaa"
    assert head["spec"]["selector"]["ray.io/node-type"] == "head"


def test_retarget_keeps_cluster_ip_and_ports_when_unchanged() -> None:
    svc = _service()
    desired = sb.build_rayservice_serve_service(svc, _cluster(svc))
    existing = {
        "metadata": {"name": "svc-serve-svc", "resourceVersion": "7"},
        "spec": {
            "clusterIP": "10.0.0.1",
            "selector": {"ray.io/cluster": "svc-old", "ray.io/serve": "true"},
            "ports": [{"name": "serve", "port": 8000, "targetPort": 8000, "protocol": "TCP"}],
        },
    }
    result = sb.retargeted(existing, desired)
    assert result["spec"]["clusterIP"] == "10.0.0.1"
    assert result["spec"]["selector"]["ray.io/cluster"] == "svc-aaaaa"
    assert result["spec"]["ports"][0]["protocol"] == "TCP"
    assert result["metadata"]["resourceVersion"] == "7"
