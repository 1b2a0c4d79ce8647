"""Services KubeRay creates for a RayCluster: head, serve and headless worker.

KubeRay v1.7.0: ``ray-operator/controllers/ray/common/service.go``.

Builders read the parsed RayCluster and return plain Service dicts with a controller
ownerReference; the reconciler only creates them when absent (KubeRay never updates an existing
Service). :func:`build_head_service` and :func:`service_ports` also take a wire dict, for the
RayJob and RayService controllers (through :mod:`~rayop.controllers.raycluster.builders`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from rayop.api import keys
from rayop.api.raycluster import IngressOptions, IngressPathType, RayCluster
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names
from rayop.controllers.kit.cluster_access import ClusterLike
from rayop.controllers.raycluster.pods import owner_reference

DEFAULT_PORTS = {
    "client": 10001,
    "gcs-server": 6379,
    "dashboard": 8265,
    "metrics": 8080,
    "serve": 8000,
}
SERVE_PORT_NAME = "serve"
Service = dict[str, Any]


class ServiceBuildError(ValueError):
    """The cluster spec does not allow the Service to be built (for example, no serve port)."""


def service_ports(cluster: ClusterLike) -> dict[str, int]:
    """Returns the head container's ports by name (unnamed: ``<port>-port``), KubeRay's defaults
    when it has none, and ``metrics: 8080`` when missing."""
    rc = cs.parse_cluster(cluster)
    ports: dict[str, int] = {}
    for port in cs.ray_container_of(rc.spec.head_group_spec.template).get("ports") or []:
        number = int(port.get("containerPort", 0))
        ports[str(port.get("name") or f"{number}-port")] = number
    if not ports:
        ports = dict(DEFAULT_PORTS)
    ports.setdefault("metrics", DEFAULT_PORTS["metrics"])
    return ports


def _is_serving_port(port_name: str) -> bool:
    return port_name == SERVE_PORT_NAME or port_name.startswith(SERVE_PORT_NAME + "-")


def build_head_service(cluster: ClusterLike, *, options: OperatorOptions) -> Service:
    """Returns the head Service (headless unless ClusterIP is enabled or a type is set).

    A user ``headGroupSpec.headService`` is used as the base: the selector is forced, operator
    labels win, ``spec.headServiceAnnotations`` win, and missing name, namespace and type are
    filled in; its ports are kept and KubeRay's appended.
    """
    rc = cs.parse_cluster(cluster)
    head = rc.spec.head_group_spec
    defaults = labels.head_service_labels(rc.name)
    template_labels = (head.template.get("metadata") or {}).get("labels") or {}
    if keys.APP_NAME in template_labels:
        defaults[keys.APP_NAME] = template_labels[keys.APP_NAME]
    selector = dict(defaults)
    annotations = dict(rc.spec.head_service_annotations or {})
    service_type = head.service_type or ""
    ports = [
        {"name": n, "port": p, "appProtocol": "tcp"} for n, p in sorted(service_ports(rc).items())
    ]
    user = head.head_service
    if user is not None:
        svc: Service = copy.deepcopy(dict(user))
        metadata = svc.setdefault("metadata", {})
        spec = svc.setdefault("spec", {})
        spec["selector"] = selector
        metadata.setdefault("annotations", {}).update(annotations)
        if not metadata["annotations"]:
            del metadata["annotations"]
        spec["ports"] = list(spec.get("ports") or []) + ports
        metadata.setdefault("labels", {}).update(selector)
        metadata["name"] = metadata.get("name") or names.head_service_name(rc)
        metadata["namespace"] = cs.cluster_namespace(rc)
        if not spec.get("type") and service_type:
            spec["type"] = service_type
    else:
        svc = {
            "metadata": {
                "name": names.head_service_name(rc),
                "namespace": cs.cluster_namespace(rc),
                "labels": dict(selector),
            },
            "spec": {"selector": selector, "ports": ports},
        }
        if annotations:
            svc["metadata"]["annotations"] = annotations
        if service_type:
            svc["spec"]["type"] = service_type
        headless = service_type in ("", "ClusterIP")
        if headless and not options.enable_ray_head_cluster_ip_service:
            svc["spec"]["clusterIP"] = "None"
            svc["spec"]["publishNotReadyAddresses"] = True
    return _finish(svc, rc)


def _finish(svc: Service, rc: RayCluster) -> Service:
    svc["apiVersion"] = "v1"
    svc["kind"] = "Service"
    svc["metadata"]["ownerReferences"] = [owner_reference(rc)]
    return svc


def build_serve_service(rc: RayCluster) -> Service:
    """Returns the ``<cluster>-serve-svc`` Service (annotation ``ray.io/enable-serve-service``).

    Raises:
        ServiceBuildError: the head container has no port named ``serve`` or ``serve-*``.
    """
    cluster_name = rc.name
    ports = [
        {"name": n, "port": p} for n, p in sorted(service_ports(rc).items()) if _is_serving_port(n)
    ]
    if not ports:
        raise ServiceBuildError(
            "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') "
            "in the Ray head container; otherwise, the Kubernetes service for Ray Serve will not be created."
        )
    svc: Service = {
        "metadata": {
            "name": names.serve_service_name(cluster_name),
            "namespace": cs.cluster_namespace(rc),
            "labels": {
                keys.RAY_ORIGINATED_FROM_CR_NAME: cluster_name,
                keys.RAY_ORIGINATED_FROM_CRD: "RayCluster",
                keys.RAY_SERVE: names.serve_service_label(cluster_name),
            },
        },
        "spec": {"selector": {keys.RAY_CLUSTER: cluster_name}, "ports": ports},
    }
    service_type = rc.spec.head_group_spec.service_type
    if service_type:
        svc["spec"]["type"] = service_type
    return _finish(svc, rc)


def wants_serve_service(rc: RayCluster) -> bool:
    """Tells whether the cluster carries ``ray.io/enable-serve-service: "true"``."""
    return cs.annotation(rc, keys.ENABLE_SERVE_SERVICE) == "true"


def wants_headless_worker_service(rc: RayCluster) -> bool:
    """Tells whether any worker group has ``numOfHosts > 1``."""
    return any(g.num_of_hosts > 1 for g in rc.spec.worker_group_specs or ())


def build_headless_worker_service(rc: RayCluster) -> Service:
    """Returns the ``<cluster>-headless`` Service selecting the cluster's worker pods."""
    cluster_name = rc.name
    svc: Service = {
        "metadata": {
            "name": names.headless_worker_service_name(rc),
            "namespace": cs.cluster_namespace(rc),
            "labels": {keys.RAY_HEADLESS_WORKER_SVC: cluster_name},
        },
        "spec": {
            "clusterIP": "None",
            "selector": {keys.RAY_CLUSTER: cluster_name, keys.RAY_NODE_TYPE: labels.WORKER},
            "type": "ClusterIP",
            "publishNotReadyAddresses": True,
        },
    }
    return _finish(svc, rc)


def build_head_ingress(rc: RayCluster) -> dict[str, Any]:
    """Returns the ``<cluster>-head-ingress`` Ingress to the dashboard port (``enableIngress``)."""
    cluster_name = rc.name
    options = rc.spec.head_group_spec.ingress_options or IngressOptions()
    cluster_annotations: Mapping[str, str] = rc.metadata.get("annotations") or {}
    annotations = {k: v for k, v in cluster_annotations.items() if k != keys.INGRESS_CLASS}
    backend = {
        "service": {
            "name": names.head_service_name(rc),
            "port": {"number": service_ports(rc).get("dashboard", DEFAULT_PORTS["dashboard"])},
        }
    }
    path = {
        "path": options.path or "/",
        "pathType": options.path_type or IngressPathType.PREFIX.value,
        "backend": backend,
    }
    rule: dict[str, Any] = {"http": {"paths": [path]}}
    if options.host:
        rule["host"] = options.host
    ingress: dict[str, Any] = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": names.ingress_name(rc),
            "namespace": cs.cluster_namespace(rc),
            "labels": {
                keys.RAY_CLUSTER: cluster_name,
                keys.RAY_IDENTIFIER: names.identifier(cluster_name, labels.HEAD),
                keys.APP_NAME: labels.APP_NAME_VALUE,
                keys.APP_CREATED_BY: labels.CREATED_BY_VALUE,
            },
            "ownerReferences": [owner_reference(rc)],
        },
        "spec": {"rules": [rule]},
    }
    if annotations:
        ingress["metadata"]["annotations"] = annotations
    if options.tls:
        ingress["spec"]["tls"] = copy.deepcopy(options.tls)
    ingress_class = cs.annotation(rc, keys.INGRESS_CLASS)
    if ingress_class is not None:
        ingress["spec"]["ingressClassName"] = ingress_class
    return ingress
