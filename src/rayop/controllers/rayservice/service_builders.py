"""Pure builders of the two Services a RayService owns: ``<svc>-head-svc`` and the serve service.

Both follow the cluster that currently serves (KubeRay v1.7.0: ``reconcileServices`` in
``ray-operator/controllers/ray/rayservice_controller.go``):

* ``<svc>-head-svc``: the serving cluster's head service (its ports and selector), renamed, with
  labels ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd=RayService``,
  ``ray.io/node-type=head`` and ``ray.io/identifier=<svc>-head``;
* the serve service, ``spec.serveService`` (name, labels, annotations, type and ports kept) or
  ``<svc>-serve-svc``: selector ``ray.io/cluster=<cluster>, ray.io/serve=true``, ports ``serve``
  and ``serve-*`` of the head container unless the custom service lists its own.

The RayService is read typed (:class:`~rayop.api.rayservice.RayService`); ``serveService`` is an
embedded object there, a plain dict copied into the Service.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.api import keys
from rayop.api.rayservice import RayService
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import labels as rc_labels
from rayop.controllers.kit import names
from rayop.controllers.kit.ownership import controller_reference
from rayop.controllers.raycluster.builders import (
    ServiceBuildError,
    build_head_service,
    service_ports,
)
from rayop.controllers.rayservice import settings

Service = dict[str, Any]

__all__ = [
    "ServiceBuildError",
    "build_rayservice_head_service",
    "build_rayservice_serve_service",
    "head_service_name",
    "retargeted",
    "selected_cluster",
    "serve_service_name",
]


def head_service_name(service: RayService) -> str:
    """Returns ``<rayservice>-head-svc``."""
    return names.owner_head_service_name(service.name)


def serve_service_name(service: RayService) -> str:
    """Returns ``spec.serveService.metadata.name`` or ``<rayservice>-serve-svc``."""
    custom = service.spec.serve_service or {}
    name = (custom.get("metadata") or {}).get("name")
    return str(name) if name else names.serve_service_name(service.name)


def selected_cluster(service: Obj | None) -> str:
    """Returns the ``ray.io/cluster`` a Service selects ("" when none)."""
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    return str(selector.get(keys.RAY_CLUSTER) or "")


def _origin_labels(service_name: str) -> dict[str, str]:
    return {
        settings.ORIGINATED_FROM_CR_NAME: names.check_label(service_name),
        settings.ORIGINATED_FROM_CRD: settings.OWNER_KIND,
    }


def build_rayservice_head_service(
    service: RayService, cluster: Obj, *, options: OperatorOptions
) -> Service:
    """Returns ``<svc>-head-svc`` pointing at ``cluster``'s head pod."""
    service_name = service.name
    svc = build_head_service(cluster, options=options)
    metadata = svc["metadata"]
    metadata["name"] = head_service_name(service)
    metadata["labels"] = {
        **_origin_labels(service_name),
        keys.RAY_NODE_TYPE: rc_labels.HEAD,
        keys.RAY_IDENTIFIER: names.identifier(service_name, rc_labels.HEAD),
    }
    metadata["ownerReferences"] = [controller_reference(service)]
    return svc


def build_rayservice_serve_service(service: RayService, cluster: Obj) -> Service:
    """Returns the serve Service selecting ``cluster``'s pods labelled ``ray.io/serve=true``.

    Raises:
        ServiceBuildError: no custom ports and no ``serve``/``serve-*`` port on the head.
    """
    service_name = service.name
    custom: dict[str, Any] = copy.deepcopy(dict(service.spec.serve_service or {}))
    metadata = custom.setdefault("metadata", {})
    spec = custom.setdefault("spec", {})
    if not spec.get("ports"):
        spec["ports"] = [
            {"name": n, "port": p}
            for n, p in sorted(service_ports(cluster).items())
            if n == "serve" or n.startswith("serve-")
        ]
    if not spec["ports"]:
        raise ServiceBuildError(
            "Please specify a port named 'serve' (or with the prefix 'serve-') in the Ray head "
            "container; otherwise, the Kubernetes service for Ray Serve cannot be created."
        )
    metadata["name"] = serve_service_name(service)
    metadata["namespace"] = service.namespace
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        **_origin_labels(service_name),
        keys.RAY_SERVE: names.serve_service_label(service_name),
    }
    metadata["ownerReferences"] = [controller_reference(service)]
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        metadata.pop(key, None)
    spec["selector"] = {
        keys.RAY_CLUSTER: cluster["metadata"]["name"],
        settings.SERVE_LABEL: "true",
    }
    head_type = (((cluster.get("spec") or {}).get("headGroupSpec")) or {}).get("serviceType")
    if not spec.get("type") and head_type:
        spec["type"] = head_type
    custom["apiVersion"] = "v1"
    custom["kind"] = "Service"
    return custom


def retargeted(existing: Obj, desired: Obj) -> Service:
    """Returns ``existing`` with ``desired``'s selector and ports (ClusterIP and the rest kept)."""
    result: Service = copy.deepcopy(dict(existing))
    result["spec"]["selector"] = copy.deepcopy(desired["spec"]["selector"])
    if _port_keys(existing) != _port_keys(desired):
        result["spec"]["ports"] = copy.deepcopy(desired["spec"]["ports"])
    return result


def _port_keys(service: Obj) -> list[tuple[str, int]]:
    ports = (service.get("spec") or {}).get("ports") or []
    return sorted((str(p.get("name") or ""), int(p.get("port") or 0)) for p in ports)
