"""KubeRay v1.7's feature gates (``--feature-gates``): names, defaults, overrides.

The defaults are :data:`rayop.api.validation.gates.DEFAULT_GATES` (validation reads the same
list). What each gate guards is checked in :mod:`.gate_checks`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rayop.api.validation.gates import DEFAULT_GATES

FEATURE_GATE_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "RayClusterStatusConditions": "ray_cluster_status_conditions",
        "RayJobDeletionPolicy": "ray_job_deletion_policy",
        "RayMultiHostIndexing": "ray_multi_host_indexing",
        "RayServiceIncrementalUpgrade": "ray_service_incremental_upgrade",
        "RayCronJob": "ray_cron_job",
        "SidecarSubmitterRestart": "sidecar_submitter_restart",
        "RayClusterNetworkPolicy": "ray_cluster_network_policy",
        "GCSFaultToleranceEmbeddedStorage": "gcs_fault_tolerance_embedded_storage",
        "RayClusterMTLS": "ray_cluster_mtls",
        "RayClusterHistoryServer": "ray_cluster_history_server",
        "KubernetesWAS": "kubernetes_was",
    }
)
"""KubeRay v1.7's gate names (as in ``--feature-gates``) -> :class:`FeatureGates` field."""


@dataclass(frozen=True, kw_only=True)
class FeatureGates:
    """KubeRay v1.7's feature gates (``--feature-gates``), with KubeRay's defaults
    (``ray-operator/pkg/features/features.go``, v1.7.0).

    Beta gates are on by default, alpha gates off. A gate that guards a spec field makes the
    controllers refuse a spec using that field while the gate is off (see ``gate_checks``).
    """

    ray_cluster_status_conditions: bool = DEFAULT_GATES["RayClusterStatusConditions"]
    """``RayClusterStatusConditions`` (beta): maintain ``status.conditions`` and atomic suspend."""
    ray_job_deletion_policy: bool = DEFAULT_GATES["RayJobDeletionPolicy"]
    """``RayJobDeletionPolicy`` (beta): RayJob ``deletionStrategy`` and worker-group ``suspend``."""
    ray_multi_host_indexing: bool = DEFAULT_GATES["RayMultiHostIndexing"]
    """``RayMultiHostIndexing`` (beta): replica index/name/host-index labels on worker pods."""
    ray_service_incremental_upgrade: bool = DEFAULT_GATES["RayServiceIncrementalUpgrade"]
    """``RayServiceIncrementalUpgrade`` (beta): NewClusterWithIncrementalUpgrade (Gateway API)."""
    ray_cron_job: bool = DEFAULT_GATES["RayCronJob"]
    """``RayCronJob`` (alpha): run the RayCronJob controller (``controllers/raycronjob/``)."""
    sidecar_submitter_restart: bool = DEFAULT_GATES["SidecarSubmitterRestart"]
    """``SidecarSubmitterRestart`` (alpha): the SidecarMode submitter container restarts on
    failure (``restartPolicy: OnFailure``), guards its submit, and fails the RayJob only after
    its restart limit."""
    ray_cluster_network_policy: bool = DEFAULT_GATES["RayClusterNetworkPolicy"]
    """``RayClusterNetworkPolicy`` (alpha): off refuses ``spec.networkPolicy``; on starts the
    ``networkpolicy`` controller, which keeps KubeRay's NetworkPolicies."""
    gcs_fault_tolerance_embedded_storage: bool = DEFAULT_GATES["GCSFaultToleranceEmbeddedStorage"]
    """``GCSFaultToleranceEmbeddedStorage`` (alpha): allows GCS FT backend ``rocksdb``."""
    ray_cluster_mtls: bool = DEFAULT_GATES["RayClusterMTLS"]
    """``RayClusterMTLS`` (alpha): off refuses ``spec.tlsOptions``; on, ``tlsOptions.enabled:
    true`` gets KubeRay's cert-manager mTLS (``controllers/raycluster/mtls/``)."""
    ray_cluster_history_server: bool = DEFAULT_GATES["RayClusterHistoryServer"]
    """``RayClusterHistoryServer`` (alpha): off refuses ``spec.historyServerOptions``; on adds
    KubeRay's history-server collector sidecar to head and worker pods."""
    kubernetes_was: bool = DEFAULT_GATES["KubernetesWAS"]
    """``KubernetesWAS`` (alpha): Kubernetes workload-aware scheduling (a Workload and PodGroup
    per gang-scheduled RayCluster; ``controllers/batchscheduler/kubernetes_was.py``)."""

    def with_overrides(self, gates: Mapping[str, bool]) -> FeatureGates:
        """Returns a copy with the gates named (KubeRay's names, as in ``--feature-gates``) set.

        Raises:
            ValueError: a name is not one of KubeRay v1.7's gates (as Go's feature gate
                parsing refuses an unrecognized gate).
        """
        updates: dict[str, bool] = {}
        for name, value in gates.items():
            field = FEATURE_GATE_FIELDS.get(name)
            if field is None:
                known = ", ".join(sorted(FEATURE_GATE_FIELDS))
                raise ValueError(f"unrecognized feature gate: {name} (known gates: {known})")
            updates[field] = value
        return dataclasses.replace(self, **updates)

    def by_name(self) -> dict[str, bool]:
        """Returns every gate under its KubeRay name with its value (for logs and docs)."""
        return {name: getattr(self, field) for name, field in FEATURE_GATE_FIELDS.items()}
