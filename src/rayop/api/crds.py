"""The CustomResourceDefinitions of rayclusters, rayjobs and rayservices, built from our models.

Names, printer columns and categories are KubeRay v1.7's; the schemas come from
:func:`rayop.api.schema.model_schema`. ``v1`` is served and stored; RayCluster, RayJob and
RayService also serve KubeRay's deprecated ``v1alpha1`` (not stored, no conversion webhook:
:mod:`rayop.api.v1alpha1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from rayop.api.common import GROUP, VERSION
from rayop.api.raycluster import RayClusterSpec, RayClusterStatus
from rayop.api.raycronjob import RayCronJobSpec, RayCronJobStatus
from rayop.api.rayjob import RayJobSpec, RayJobStatus
from rayop.api.rayservice import RayServiceSpec, RayServiceStatuses
from rayop.api.schema import model_schema
from rayop.api.v1alpha1 import ALPHA_KINDS, v1alpha1_version

__all__ = [
    "KINDS",
    "RAYCLUSTER",
    "RAYCRONJOB",
    "RAYJOB",
    "RAYSERVICE",
    "CrdKind",
    "build_crd",
    "build_crds",
    "crd_schema",
]


@dataclass(frozen=True)
class CrdKind:
    """What distinguishes one of our CRDs from the others."""

    kind: str
    plural: str
    spec: type[BaseModel]
    status: type[BaseModel]
    printer_columns: tuple[tuple[str, str, str, int], ...]
    """(name, type, jsonPath, priority) of each ``kubectl get`` column, in order."""

    @property
    def singular(self) -> str:
        """The lower-case kind."""
        return self.kind.lower()

    @property
    def name(self) -> str:
        """The CRD's name, ``<plural>.ray.io``."""
        return f"{self.plural}.{GROUP}"


RAYCLUSTER = CrdKind(
    kind="RayCluster",
    plural="rayclusters",
    spec=RayClusterSpec,
    status=RayClusterStatus,
    printer_columns=(
        ("desired workers", "integer", ".status.desiredWorkerReplicas", 0),
        ("available workers", "integer", ".status.availableWorkerReplicas", 0),
        ("cpus", "string", ".status.desiredCPU", 0),
        ("memory", "string", ".status.desiredMemory", 0),
        ("gpus", "string", ".status.desiredGPU", 0),
        ("tpus", "string", ".status.desiredTPU", 1),
        ("status", "string", ".status.state", 0),
        ("age", "date", ".metadata.creationTimestamp", 0),
        ("head pod IP", "string", ".status.head.podIP", 1),
        ("head service IP", "string", ".status.head.serviceIP", 1),
    ),
)
RAYJOB = CrdKind(
    kind="RayJob",
    plural="rayjobs",
    spec=RayJobSpec,
    status=RayJobStatus,
    printer_columns=(
        ("job status", "string", ".status.jobStatus", 0),
        ("deployment status", "string", ".status.jobDeploymentStatus", 0),
        ("ray cluster name", "string", ".status.rayClusterName", 0),
        ("start time", "string", ".status.startTime", 0),
        ("end time", "string", ".status.endTime", 0),
        ("age", "date", ".metadata.creationTimestamp", 0),
    ),
)
RAYSERVICE = CrdKind(
    kind="RayService",
    plural="rayservices",
    spec=RayServiceSpec,
    status=RayServiceStatuses,
    printer_columns=(
        ("service status", "string", ".status.serviceStatus", 0),
        ("num serve endpoints", "string", ".status.numServeEndpoints", 0),
    ),
)
RAYCRONJOB = CrdKind(
    kind="RayCronJob",
    plural="raycronjobs",
    spec=RayCronJobSpec,
    status=RayCronJobStatus,
    printer_columns=(
        ("schedule", "string", ".spec.schedule", 0),
        ("timezone", "string", ".spec.timeZone", 0),
        ("last schedule", "date", ".status.lastScheduleTime", 0),
        ("age", "date", ".metadata.creationTimestamp", 0),
        ("suspend", "boolean", ".spec.suspend", 0),
    ),
)
KINDS: tuple[CrdKind, ...] = (RAYCLUSTER, RAYJOB, RAYSERVICE, RAYCRONJOB)


def crd_schema(kind: CrdKind) -> dict[str, Any]:
    """Returns the ``openAPIV3Schema`` of one kind: apiVersion, kind, metadata, spec, status."""
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": model_schema(kind.spec),
            "status": model_schema(kind.status),
        },
    }


def build_crd(kind: CrdKind) -> dict[str, Any]:
    """Returns the apiextensions.k8s.io/v1 CustomResourceDefinition of one kind."""
    columns = []
    for name, type_, path, priority in kind.printer_columns:
        column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
        if priority:
            column["priority"] = priority
        columns.append(column)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.name},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "categories": ["all"],
            },
            "scope": "Namespaced",
            "versions": _versions(kind, columns),
        },
    }


def _versions(kind: CrdKind, columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Returns ``v1`` (served, stored) and, for KubeRay's older kinds, ``v1alpha1``."""
    v1 = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": crd_schema(kind)},
    }
    if kind.kind not in ALPHA_KINDS:
        return [v1]
    return [v1, v1alpha1_version(kind.kind, v1)]


def build_crds() -> list[dict[str, Any]]:
    """Returns the four CRDs (rayclusters, rayjobs, rayservices, raycronjobs), freshly built."""
    return [build_crd(kind) for kind in KINDS]
