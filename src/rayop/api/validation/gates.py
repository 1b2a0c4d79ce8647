"""KubeRay v1.7's feature gates by KubeRay's names, with KubeRay's defaults (the one list).

Validation takes the gates as a plain mapping (``{"RayJobDeletionPolicy": True, ...}``) so that
``rayop.api`` needs nothing from the operator's options; the controllers pass
``FeatureGates.by_name()``, whose defaults are read from :data:`DEFAULT_GATES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["DEFAULT_GATES", "Gates", "gate_on"]

Gates = Mapping[str, bool]
"""KubeRay feature gate name -> enabled."""

DEFAULT_GATES: Final[Mapping[str, bool]] = MappingProxyType(
    {
        "RayClusterStatusConditions": True,
        "RayJobDeletionPolicy": True,
        "RayMultiHostIndexing": True,
        "RayServiceIncrementalUpgrade": True,
        "RayCronJob": False,
        "SidecarSubmitterRestart": False,
        "RayClusterNetworkPolicy": False,
        "GCSFaultToleranceEmbeddedStorage": False,
        "RayClusterMTLS": False,
        "RayClusterHistoryServer": False,
        "KubernetesWAS": False,
    }
)
"""Every KubeRay v1.7 gate and its default (beta on, alpha off), in KubeRay's order."""


def gate_on(gates: Gates | None, name: str) -> bool:
    """Tells whether the gate ``name`` is on in ``gates`` (KubeRay's default when absent).

    Raises:
        KeyError: ``name`` is not one of KubeRay v1.7's gates.
    """
    if gates is not None and name in gates:
        return gates[name]
    return DEFAULT_GATES[name]
