"""``rayop run`` registers the RayCronJob controller only with the ``RayCronJob`` gate on."""

from __future__ import annotations

import pytest

from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.config import KubeConfig
from rayop.runtime.metrics import OperatorMetrics


@pytest.mark.parametrize(("gate", "expected"), [(False, False), (True, True)])
async def test_the_gate_decides_whether_the_controller_runs(gate: bool, expected: bool) -> None:
    gates = FeatureGates().with_overrides({"RayCronJob": gate})
    settings = OperatorSettings(
        adaptive_concurrency=True,
        max_reconcile_concurrency=6,
        metrics_addr="0",
        health_probe_bind_address="0",
        enable_leader_election=False,
        options=OperatorOptions(feature_gates=gates),
    )
    metrics = OperatorMetrics()
    async with new_client(KubeConfig(server="http://127.0.0.1:9"), settings, metrics) as client:
        controllers = build_operator(client, settings, metrics).controllers
        names = sorted(controllers)
        assert all(controller.adaptive for controller in controllers.values())
    others = ["raycluster", "rayjob", "rayservice"]
    assert names == sorted([*others, "raycronjob"] if expected else others)
