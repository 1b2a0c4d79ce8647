"""CRD schemas of the Kubernetes objects the ray.io types embed, as controller-gen writes them.

The definitions come from ``k8s_openapi.json``, which ``scripts/gen-k8s-openapi`` generates
from the OpenAPI v3 that a real kube-apiserver publishes (descriptions dropped). Each is
turned into the structural schema controller-gen (KubeRay's CRD generator, run with
``maxDescLen=0``) writes for the Go type:

- references are inlined (``$ref`` and the ``allOf: [$ref]`` wrapper alike);
- ``Quantity`` is int-or-string with the quantity ``pattern``, ``IntOrString`` int-or-string,
  ``Time``/``MicroTime`` a ``date-time`` string;
- an embedded ``ObjectMeta`` keeps only annotations, finalizers, labels, name and namespace
  (controller-gen's ``generateEmbeddedObjectMeta``);
- ``metav1.Condition`` and a Service's ``PortStatus`` carry their kubebuilder validation
  markers, which the OpenAPI lacks;
- only the structural keywords are kept (type, format, required, items, properties,
  additionalProperties, the ``x-kubernetes-list-*``/``map-type`` marks, pattern) and
  ``default``, except on a required field (openapi-gen writes the zero value there,
  controller-gen writes nothing) and except the defaults Go spells as a named constant
  (:data:`GO_CONSTANT_DEFAULTS`), which controller-gen cannot evaluate and so omits; enums are
  dropped, as controller-gen ignores ``+enum``.

:data:`EMBEDDED` names, per ``Model.wireField`` of the ray.io models, the type embedded there.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

__all__ = [
    "EMBEDDED",
    "GO_CONSTANT_DEFAULTS",
    "QUANTITY_PATTERN",
    "definitions",
    "embedded_schema",
    "kubernetes_schema",
    "source",
]

Schema = dict[str, Any]

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The pattern controller-gen gives every ``resource.Quantity``."""

_CORE = "io.k8s.api.core.v1."
_NET = "io.k8s.api.networking.v1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."

EMBEDDED: dict[str, str] = {
    "AutoscalerOptions.resources": _CORE + "ResourceRequirements",
    "AutoscalerOptions.securityContext": _CORE + "SecurityContext",
    "AutoscalerOptions.env": _CORE + "EnvVar",
    "AutoscalerOptions.envFrom": _CORE + "EnvFromSource",
    "AutoscalerOptions.volumeMounts": _CORE + "VolumeMount",
    "RedisCredential.valueFrom": _CORE + "EnvVarSource",
    "CollectorOptions.resources": _CORE + "ResourceRequirements",
    "CollectorOptions.env": _CORE + "EnvVar",
    "NetworkPolicyRules.ingressRules": _NET + "NetworkPolicyIngressRule",
    "NetworkPolicyRules.egressRules": _NET + "NetworkPolicyEgressRule",
    "IngressOptions.tls": _NET + "IngressTLS",
    "HeadGroupSpec.template": _CORE + "PodTemplateSpec",
    "HeadGroupSpec.headService": _CORE + "Service",
    "WorkerGroupSpec.template": _CORE + "PodTemplateSpec",
    "RayJobSpec.submitterPodTemplate": _CORE + "PodTemplateSpec",
    "RayServiceSpec.serveService": _CORE + "Service",
}
"""``Model.wireField`` -> the Kubernetes definition embedded there (a list field: its items)."""

GO_CONSTANT_DEFAULTS: frozenset[tuple[str, str]] = frozenset(
    {
        (_CORE + "AzureDiskVolumeSource", "cachingMode"),
        (_CORE + "AzureDiskVolumeSource", "kind"),
    }
)
"""(definition, property) whose Go default is ``+default=ref(Constant)``: openapi-gen writes
the value, controller-gen omits it, so KubeRay's CRDs leave these fields unset. Written, they
would be stored (and defaulted on read) into every pod template with an azureDisk volume, and a
RayService or a Recreate RayCluster whose spec hash KubeRay stored without them would be rebuilt
at takeover. The markers: AzureDiskVolumeSource in
https://github.com/kubernetes/api/blob/master/core/v1/types.go"""

_KEPT = (
    "type",
    "format",
    "required",
    "pattern",
    "default",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_EMBEDDED_META: Schema = {
    "type": "object",
    "properties": {
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": _STRING_MAP,
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}
_CONDITION: Schema = {
    "type": "object",
    "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    "properties": {
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "message": {"type": "string", "maxLength": 32768},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "reason": {
            "type": "string",
            "maxLength": 1024,
            "minLength": 1,
            "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        },
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "type": {
            "type": "string",
            "maxLength": 316,
            "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        },
    },
}
_PORT_STATUS: Schema = {
    "type": "object",
    "required": ["error", "port", "protocol"],
    "properties": {
        "error": {
            "type": "string",
            "maxLength": 316,
            "pattern": _CONDITION["properties"]["type"]["pattern"],
        },
        "port": {"type": "integer", "format": "int32"},
        "protocol": {"type": "string"},
    },
}
_SPECIAL: dict[str, Schema] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
    _META + "Time": {"type": "string", "format": "date-time"},
    _META + "MicroTime": {"type": "string", "format": "date-time"},
    _META + "ObjectMeta": _EMBEDDED_META,
    _META + "Condition": _CONDITION,
    _CORE + "PortStatus": _PORT_STATUS,
}


@functools.cache
def _document() -> dict[str, Any]:
    text = resources.files("rayop.api").joinpath("k8s_openapi.json").read_text()
    document: dict[str, Any] = json.loads(text)
    return document


def definitions() -> dict[str, Any]:
    """Returns the generated OpenAPI v3 definitions by name (shared: do not modify)."""
    schemas: dict[str, Any] = _document()["schemas"]
    return schemas


def source() -> str:
    """Returns where the definitions were read from (the kube-apiserver version and paths)."""
    return str(_document()["source"])


def kubernetes_schema(name: str) -> Schema:
    """Returns controller-gen's CRD schema of one Kubernetes definition (a new dict).

    Args:
        name: the OpenAPI definition name, e.g. ``io.k8s.api.core.v1.PodTemplateSpec``.

    Raises:
        KeyError: the generated file has no such definition (add its type to the
            generator's ROOTS and regenerate).
    """
    return copy.deepcopy(_converted(name))


def embedded_schema(field: str) -> Schema | None:
    """Returns the schema of the Kubernetes object embedded at ``Model.wireField``, if any."""
    name = EMBEDDED.get(field)
    return None if name is None else kubernetes_schema(name)


@functools.cache
def _converted(name: str) -> Schema:
    special = _SPECIAL.get(name)
    if special is not None:
        return special
    return _convert(definitions()[name], name)


def _convert(node: Schema, name: str = "") -> Schema:
    if "$ref" in node:
        return copy.deepcopy(_converted(node["$ref"].rsplit("/", 1)[-1]))
    if "allOf" in node:
        (inner,) = node["allOf"]
        return _convert(inner)
    out: Schema = {key: node[key] for key in _KEPT if key in node}
    required = set(node.get("required", ()))
    if "properties" in node:
        out["properties"] = {}
        for prop, sub in node["properties"].items():
            converted = _convert(sub)
            if prop in required or (name, prop) in GO_CONSTANT_DEFAULTS:
                converted.pop("default", None)
            out["properties"][prop] = converted
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out[key] = _convert(node[key])
    return out
