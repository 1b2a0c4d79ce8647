"""KubeRay's feature gate defaults are written once (api.validation.gates) and read by both sides."""

from __future__ import annotations

import pytest

from rayop.api.validation.gates import DEFAULT_GATES, gate_on
from rayop.controllers.config.gates import FEATURE_GATE_FIELDS, FeatureGates


def test_the_operator_gates_default_to_the_validation_list() -> None:
    assert list(FEATURE_GATE_FIELDS) == list(DEFAULT_GATES)
    assert FeatureGates().by_name() == dict(DEFAULT_GATES)
    beta = {name for name, on in DEFAULT_GATES.items() if on}
    assert beta == {
        "RayClusterStatusConditions",
        "RayJobDeletionPolicy",
        "RayMultiHostIndexing",
        "RayServiceIncrementalUpgrade",
    }


def test_validation_reads_the_overrides_then_the_defaults() -> None:
    gates = FeatureGates().with_overrides({"RayClusterMTLS": True}).by_name()
    assert gate_on(gates, "RayClusterMTLS") and gate_on(None, "RayJobDeletionPolicy")
    assert not gate_on({}, "RayClusterNetworkPolicy")
    with pytest.raises(KeyError):
        gate_on(None, "NoSuchGate")
