"""The KubeRay feature gates some checks depend on, by KubeRay's names, with KubeRay's defaults.

Validation takes the gates as a plain mapping (``{"RayJobDeletionPolicy": True, ...}``) so that
``rayop.api`` needs nothing from the operator's options; the controllers pass
``FeatureGates.by_name()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["DEFAULT_GATES", "Gates", "gate_on"]

Gates = Mapping[str, bool]
"""KubeRay feature gate name -> enabled."""

DEFAULT_GATES: Final[Mapping[str, bool]] = {
    "RayJobDeletionPolicy": True,
    "RayServiceIncrementalUpgrade": True,
    "GCSFaultToleranceEmbeddedStorage": False,
    "RayClusterMTLS": False,
}
"""KubeRay v1.7's defaults of the gates validation reads (beta on, alpha off)."""


def gate_on(gates: Gates | None, name: str) -> bool:
    """Tells whether the gate ``name`` is on in ``gates`` (KubeRay's default when absent)."""
    if gates is not None and name in gates:
        return gates[name]
    return DEFAULT_GATES.get(name, False)
