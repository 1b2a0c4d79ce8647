"""KubeRay's deprecated ``ray.io/v1alpha1``: served beside ``v1``, never stored.

KubeRay v1.7.0's CRDs serve ``v1alpha1`` with ``storage: false``, ``deprecated: true`` and no
conversion webhook (strategy None: an object is the same JSON in both versions, only its
``apiVersion`` changes). Its schema is ``v1``'s without the fields added after ``v1alpha1``
stopped receiving new ones, with ``rayStartParams`` (and a RayJob's ``entrypoint``) still
required, and with the Serve ``healthLastUpdateTime`` status fields ``v1`` dropped.
:func:`v1alpha1_version` derives that version entry from the ``v1`` one.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["ALPHA_KINDS", "ALPHA_VERSION", "v1alpha1_version"]

ALPHA_VERSION = "v1alpha1"

_CLUSTER_SPEC_ONLY_V1 = (
    "authOptions",
    "autoscalerOptions.args",
    "autoscalerOptions.command",
    "autoscalerOptions.version",
    "gcsFaultToleranceOptions",
    "headGroupSpec.ingressOptions",
    "headGroupSpec.labels",
    "headGroupSpec.resources",
    "historyServerOptions",
    "managedBy",
    "networkPolicy",
    "tlsOptions",
    "upgradeStrategy",
    "workerGroupSpecs[].idleTimeoutSeconds",
    "workerGroupSpecs[].labels",
    "workerGroupSpecs[].numOfHosts",
    "workerGroupSpecs[].priority",
    "workerGroupSpecs[].resources",
    "workerGroupSpecs[].suspend",
)
_CLUSTER_STATUS_ONLY_V1 = ("conditions", "head.podName", "head.serviceName", "stateTransitionTimes")
_CLUSTER_SPEC_REQUIRED = (
    ("headGroupSpec", "rayStartParams"),
    ("workerGroupSpecs[]", "rayStartParams"),
)
_SERVICE_STATUS_ONLY_V1 = ("lastTrafficMigratedTime", "targetCapacity", "trafficRoutedPercent")


def _under(prefix: str, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{prefix}.{name}" for name in names)


def _cluster(spec: str, *statuses: str) -> tuple[str, ...]:
    out = _under(spec, _CLUSTER_SPEC_ONLY_V1)
    for status in statuses:
        out += _under(status, _CLUSTER_STATUS_ONLY_V1)
    return out


_RAYJOB_SPEC_ONLY_V1 = (
    "activeDeadlineSeconds",
    "backoffLimit",
    "deletionStrategy",
    "managedBy",
    "preRunningDeadlineSeconds",
    "submissionMode",
    "submitterConfig",
)
_RAYJOB_STATUS_ONLY_V1 = (
    "failed",
    "jobStatusCheckFailureStartTime",
    "rayJobInfo",
    "reason",
    "succeeded",
)
_RAYSERVICE_SPEC_ONLY_V1 = (
    "excludeHeadPodFromServeSvc",
    "managedBy",
    "rayClusterDeletionDelaySeconds",
    "suspend",
    "upgradeStrategy",
)
_ACTIVE, _PENDING = "status.activeServiceStatus", "status.pendingServiceStatus"
_ONLY_V1: dict[str, tuple[str, ...]] = {
    "RayCluster": _cluster("spec", "status"),
    "RayJob": (
        _cluster("spec.rayClusterSpec", "status.rayClusterStatus")
        + _under("spec", _RAYJOB_SPEC_ONLY_V1)
        + _under("status", _RAYJOB_STATUS_ONLY_V1)
    ),
    "RayService": (
        _cluster(
            "spec.rayClusterConfig", f"{_ACTIVE}.rayClusterStatus", f"{_PENDING}.rayClusterStatus"
        )
        + _under("spec", _RAYSERVICE_SPEC_ONLY_V1)
        + _under("status", ("conditions", "numServeEndpoints"))
        + _under(_ACTIVE, _SERVICE_STATUS_ONLY_V1)
        + _under(_PENDING, _SERVICE_STATUS_ONLY_V1)
    ),
}
"""Per kind, the schema paths (``[]`` for list items) ``v1`` has and ``v1alpha1`` lacks."""
ALPHA_KINDS = frozenset(_ONLY_V1)
"""The kinds KubeRay still serves as ``v1alpha1``."""

_CLUSTER_SPEC_AT = {
    "RayCluster": "spec",
    "RayJob": "spec.rayClusterSpec",
    "RayService": "spec.rayClusterConfig",
}
_REQUIRED: dict[str, tuple[tuple[str, str | None], ...]] = {
    "RayCluster": (),
    "RayJob": (("spec", "entrypoint"),),
    "RayService": (("spec", None),),
}
"""Per kind, (object path, field) required in ``v1alpha1`` only; None: nothing required."""

_ALPHA_ONLY = tuple(
    (f"status.{which}.{maps}", "healthLastUpdateTime")
    for which in ("activeServiceStatus", "pendingServiceStatus")
    for maps in ("applicationStatuses{}", "applicationStatuses{}.serveDeploymentStatuses{}")
)
"""RayService status fields ``v1alpha1`` still has: (object path, field), a date-time each."""

_PRINTER_COLUMNS = frozenset({"RayCluster"})
"""The kinds whose ``v1alpha1`` keeps the printer columns (KubeRay's RayJob and RayService
``v1alpha1`` have none)."""


def _node(root: dict[str, Any], path: str) -> dict[str, Any]:
    node = root
    for part in path.replace("[]", ".[]").replace("{}", ".{}").split("."):
        if part == "[]":
            node = node["items"]
        elif part == "{}":
            node = node["additionalProperties"]
        else:
            node = node["properties"][part]
    return node


def _remove(root: dict[str, Any], path: str) -> None:
    parent, _, name = path.rpartition(".")
    node = _node(root, parent)
    node.get("properties", {}).pop(name, None)
    required = [r for r in node.get("required", ()) if r != name]
    if required:
        node["required"] = required
    else:
        node.pop("required", None)


def _require(node: dict[str, Any], field: str | None) -> None:
    if field is None:
        node.pop("required", None)
    else:
        node["required"] = sorted({*node.get("required", ()), field})


def v1alpha1_version(kind: str, v1: dict[str, Any]) -> dict[str, Any]:
    """Returns the ``v1alpha1`` entry of a CRD's ``spec.versions``, derived from ``v1``'s.

    Args:
        kind: ``RayCluster``, ``RayJob`` or ``RayService``.
        v1: the CRD's ``v1`` version entry (not modified).

    Raises:
        KeyError: ``kind`` has no ``v1alpha1`` (RayCronJob is new in v1).
    """
    removed = _ONLY_V1[kind]
    root = copy.deepcopy(v1["schema"]["openAPIV3Schema"])
    for path in removed:
        _remove(root, path)
    spec_at = _CLUSTER_SPEC_AT[kind]
    for group, field in _CLUSTER_SPEC_REQUIRED:
        _require(_node(root, f"{spec_at}.{group}"), field)
    for path, required in _REQUIRED[kind]:
        _require(_node(root, path), required)
    if kind == "RayService":
        for path, field in _ALPHA_ONLY:
            properties = _node(root, path)["properties"]
            properties[field] = {"type": "string", "format": "date-time"}
            _node(root, path)["properties"] = dict(sorted(properties.items()))
    version: dict[str, Any] = {"name": ALPHA_VERSION}
    if kind in _PRINTER_COLUMNS and "additionalPrinterColumns" in v1:
        version["additionalPrinterColumns"] = copy.deepcopy(v1["additionalPrinterColumns"])
    version |= {
        "deprecated": True,
        "deprecationWarning": f"ray.io/v1alpha1 {kind} is deprecated; use ray.io/v1 {kind}. "
        "v1alpha1 receives no new fields and will be unavailable in KubeRay 1.9.",
        "served": True,
        "storage": False,
        "subresources": copy.deepcopy(v1.get("subresources", {})),
        "schema": {"openAPIV3Schema": root},
    }
    return version
