"""Refusal of gated spec fields: gate off, or feature unimplemented.

The gate checks are KubeRay v1.7.0's (``ray-operator/controllers/ray/utils/validation.go``).

KubeRay's spec validation refuses a spec that uses a gated feature while the operator runs with
that gate off, with the messages of KubeRay's ``ValidateRayClusterSpec``/``ValidateRayJobSpec``;
the RayCluster controller then reports it like any other invalid spec (Warning event
``InvalidRayClusterSpec``, ``status.reason``, no pods). The checks need the operator's
:class:`~rayop.controllers.config.options.FeatureGates`, so they live here rather than in
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

With their gates on, ``historyServerOptions`` (the collector sidecar, ``pods.py`` and
``history_server.py`` in the RayCluster controller), ``networkPolicy`` (the ``networkpolicy``
controller) and ``tlsOptions`` (the ``raycluster-mtls`` controller and the pods' TLS settings,
``controllers/raycluster/mtls/``) are honoured as KubeRay does. With a gate off the message is
KubeRay's gate message.

The RayCluster checks also apply to the cluster spec embedded in a RayJob or a RayService, as
KubeRay validates those through the same function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.controllers.config.gates import FeatureGates

__all__ = [
    "cluster_spec_gate_problems",
    "raycluster_gate_problems",
    "rayjob_gate_problems",
    "rayservice_gate_problems",
]

_FIELD_GATES: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "historyServerOptions",
        "RayClusterHistoryServer",
        "ray_cluster_history_server",
        "the history-server collector",
        "RayClusterHistoryServer feature gate is not enabled",
    ),
    (
        "networkPolicy",
        "RayClusterNetworkPolicy",
        "ray_cluster_network_policy",
        "NetworkPolicy",
        "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
    ),
    (
        "tlsOptions",
        "RayClusterMTLS",
        "ray_cluster_mtls",
        "mTLS",
        "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled",
    ),
)
"""(spec field, KubeRay gate name, FeatureGates attribute, feature, KubeRay's gate-off message)
for gated fields: refused with the gate off as KubeRay does, and with it on only when rayop does
not implement the feature (see ``_IMPLEMENTED``)."""

ROCKSDB_GATE_OFF = (
    "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: "
    "'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
)
DELETION_STRATEGY_GATE_OFF = (
    "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
)


def _not_implemented(where: str, feature: str, gate: str) -> str:
    return (
        f"{where}: rayop does not implement {feature} ({gate}) yet; "
        "refusing rather than running the cluster without it"
    )


_IMPLEMENTED: frozenset[str] = frozenset({"historyServerOptions", "networkPolicy", "tlsOptions"})
"""Gated fields rayop honours once their gate is on (KubeRay's own checks then apply)."""


def _requests_feature(field: str, value: Any) -> bool:
    """Tells whether a set gated field asks for an unimplemented feature (``tlsOptions`` only
    when enabled)."""
    if field in _IMPLEMENTED:
        return False
    return field != "tlsOptions" or _mapping(value).get("enabled") is True


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def cluster_spec_gate_problems(
    spec: Mapping[str, Any] | None, gates: FeatureGates, *, at: str = "spec", lead: str = ""
) -> list[str]:
    """Returns a problem for each gated feature a RayCluster spec uses that rayop must refuse.

    That is a gated field used while its gate is off, and a field of a feature rayop does not
    implement whatever its gate (none today: every gated field is honoured with its gate on).

    Args:
        spec: The RayCluster spec as wire JSON (a RayCluster's ``spec``, a RayJob's
            ``spec.rayClusterSpec`` or a RayService's ``spec.rayClusterConfig``).
        gates: The operator's feature gates.
        at: The path of ``spec`` in the object, used in the "not implemented" messages.
        lead: What KubeRay puts before a cluster spec message of a RayJob or RayService
            (``"The RayJob spec is invalid: "``).
    """
    spec = _mapping(spec)
    problems = []
    ft = spec.get("gcsFaultToleranceOptions")
    if (
        isinstance(ft, Mapping)
        and ft.get("backend") == "rocksdb"
        and not gates.gcs_fault_tolerance_embedded_storage
    ):
        problems.append(lead + ROCKSDB_GATE_OFF)
    if not gates.ray_job_deletion_policy:
        for group in spec.get("workerGroupSpecs") or ():
            if _mapping(group).get("suspend") is True:
                name = _mapping(group).get("groupName", "")
                problems.append(
                    f"{lead}worker group {name} can be suspended only when the "
                    "RayJobDeletionPolicy feature gate is enabled"
                )
                break  # KubeRay names the first such group
    for field, gate, attribute, feature, gate_off in _FIELD_GATES:
        value = spec.get(field)
        if value is None:
            continue
        if not getattr(gates, attribute):
            problems.append(lead + gate_off)
        elif _requests_feature(field, value):
            problems.append(_not_implemented(f"{at}.{field}", feature, gate))
    return problems


def raycluster_gate_problems(cluster: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """Returns the refused gated features a RayCluster (wire JSON) uses (gate off or unimplemented)."""
    return cluster_spec_gate_problems(cluster.get("spec"), gates, at="spec")


def rayjob_gate_problems(rayjob: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """Returns the refused gated features a RayJob (wire JSON) uses (gate off or unimplemented).

    That is ``spec.deletionStrategy`` without ``RayJobDeletionPolicy``, and the RayCluster
    checks on ``spec.rayClusterSpec``.
    """
    spec = _mapping(rayjob.get("spec"))
    problems = []
    if spec.get("deletionStrategy") is not None and not gates.ray_job_deletion_policy:
        problems.append(DELETION_STRATEGY_GATE_OFF)
    cluster_spec = spec.get("rayClusterSpec")
    if cluster_spec is not None:
        problems += cluster_spec_gate_problems(
            cluster_spec, gates, at="spec.rayClusterSpec", lead="The RayJob spec is invalid: "
        )
    return problems


def rayservice_gate_problems(rayservice: Mapping[str, Any], gates: FeatureGates) -> list[str]:
    """Returns the refused gated features a RayService's ``spec.rayClusterConfig`` uses."""
    spec = _mapping(rayservice.get("spec"))
    return cluster_spec_gate_problems(
        spec.get("rayClusterConfig"),
        gates,
        at="spec.rayClusterConfig",
        lead="The RayService spec is invalid: ",
    )
