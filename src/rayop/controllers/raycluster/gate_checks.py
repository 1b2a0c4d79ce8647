"""Refusal of spec fields whose KubeRay feature gate is off (kuberay-v1.md §3.1 step 4).

KubeRay's spec validation refuses a spec that uses a gated feature while the operator runs with
that gate off; the RayCluster controller then reports it like any other invalid spec (Warning
event ``InvalidRayClusterSpec``, ``status.reason``, no pods). The checks need the operator's
:class:`~rayop.controllers.raycluster.options.FeatureGates`, so they live here rather than in
the option-free ``rayop.api.validation``. They read wire JSON (plain dicts), never block and
never raise.

Which field each gate guards (KubeRay's ``utils/validation.go``; the samples
``ray-cluster.historyserver.yaml``, ``ray-cluster.mtls.yaml`` and
``ray-cluster.network-policy-deny-all.yaml`` use the first three):

- ``historyServerOptions`` set: ``RayClusterHistoryServer``;
- ``networkPolicy`` set: ``RayClusterNetworkPolicy``;
- ``tlsOptions`` set (even with ``enabled: false``): ``RayClusterMTLS``;
- ``gcsFaultToleranceOptions.backend: rocksdb``: ``GCSFaultToleranceEmbeddedStorage``;
- a worker group with ``suspend: true``, and a RayJob's ``deletionStrategy``:
  ``RayJobDeletionPolicy``.

The RayCluster checks also apply to the cluster spec embedded in a RayJob or a RayService, as
KubeRay validates those through the same function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.controllers.raycluster.options import FeatureGates

__all__ = [
    "cluster_spec_gate_problems",
    "raycluster_gate_problems",
    "rayjob_gate_problems",
    "rayservice_gate_problems",
]

_FIELD_GATES: tuple[tuple[str, str, str], ...] = (
    ("historyServerOptions", "RayClusterHistoryServer", "ray_cluster_history_server"),
    ("networkPolicy", "RayClusterNetworkPolicy", "ray_cluster_network_policy"),
    ("tlsOptions", "RayClusterMTLS", "ray_cluster_mtls"),
)
"""(spec field, KubeRay gate name, FeatureGates attribute) for fields refused when set."""


def _needs(where: str, gate: str) -> str:
    return f"{where}: needs the {gate} feature gate, which is off (--feature-gates={gate}=true)"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def cluster_spec_gate_problems(
    spec: Mapping[str, Any] | None, gates: FeatureGates, *, at: str = "spec"
) -> list[str]:
    """Returns a problem for each gated feature a RayCluster spec uses while its gate is off.

    Args:
        spec: The RayCluster spec as wire JSON (a RayCluster's ``spec``, a RayJob's
            ``spec.rayClusterSpec`` or a RayService's ``spec.rayClusterConfig``).
        gates: The operator's feature gates.
        at: The path of ``spec`` in the object, used in the messages.
    """
    spec = _mapping(spec)
    problems = []
    ft = spec.get("gcsFaultToleranceOptions")
    if (
        isinstance(ft, Mapping)
        and ft.get("backend") == "rocksdb"
        and not gates.gcs_fault_tolerance_embedded_storage
    ):
        problems.append(
            _needs(f"{at}.gcsFaultToleranceOptions.backend", "GCSFaultToleranceEmbeddedStorage")
        )
    if not gates.ray_job_deletion_policy:
        for i, group in enumerate(spec.get("workerGroupSpecs") or ()):
            if _mapping(group).get("suspend") is True:
                problems.append(
                    _needs(f"{at}.workerGroupSpecs[{i}].suspend", "RayJobDeletionPolicy")
                )
    for field, gate, attribute in _FIELD_GATES:
        if spec.get(field) is not None and not getattr(gates, attribute):
            problems.append(_needs(f"{at}.{field}", gate))
    return problems


def raycluster_gate_problems(cluster: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """Returns the gated features a RayCluster (wire JSON) uses while their gate is off."""
    return cluster_spec_gate_problems(cluster.get("spec"), gates, at="spec")


def rayjob_gate_problems(rayjob: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """Returns the gated features a RayJob (wire JSON) uses while their gate is off.

    That is ``spec.deletionStrategy`` without ``RayJobDeletionPolicy``, and the RayCluster
    checks on ``spec.rayClusterSpec``.
    """
    spec = _mapping(rayjob.get("spec"))
    problems = []
    if spec.get("deletionStrategy") is not None and not gates.ray_job_deletion_policy:
        problems.append(_needs("spec.deletionStrategy", "RayJobDeletionPolicy"))
    cluster_spec = spec.get("rayClusterSpec")
    if cluster_spec is not None:
        problems += cluster_spec_gate_problems(cluster_spec, gates, at="spec.rayClusterSpec")
    return problems


def rayservice_gate_problems(rayservice: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """Returns the gated features a RayService's ``spec.rayClusterConfig`` uses while off."""
    spec = _mapping(rayservice.get("spec"))
    return cluster_spec_gate_problems(
        spec.get("rayClusterConfig"), gates, at="spec.rayClusterConfig"
    )
