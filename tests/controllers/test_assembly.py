"""The one assembly path: which controllers :func:`build_operator` builds, and that every one of
them, the secondary ones included, gets its workers and ``auto`` the same way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.catalog import CATALOG
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.config import KubeConfig
from rayop.kube.resources import ENDPOINT_SLICES, PODS, SERVICES
from rayop.runtime.metrics import OperatorMetrics

NOWHERE = KubeConfig(server="http://127.0.0.1:9")
SECONDARY_GATES = {"RayClusterNetworkPolicy": True, "RayClusterMTLS": True}


def _settings(gates: dict[str, bool], **kwargs: object) -> OperatorSettings:
    options = OperatorOptions(
        feature_gates=FeatureGates().with_overrides(gates), cert_manager_available=True
    )
    settings = OperatorSettings(
        metrics_addr="0", health_probe_bind_address="0", enable_leader_election=False
    )
    return replace(settings, options=options, **kwargs)  # type: ignore[arg-type]


async def _workers(settings: OperatorSettings) -> dict[str, tuple[int, int | None]]:
    """Builds the operator; returns each controller's (limit now, adaptive ceiling)."""
    metrics = OperatorMetrics()
    async with new_client(NOWHERE, settings, metrics) as client:
        built = build_operator(client, settings, metrics)
        out = {}
        for name, controller in built.controllers.items():
            ceiling = controller.adaptive.law.settings.ceiling if controller.adaptive else None
            out[name] = (controller.max_concurrent_reconciles, ceiling)
        return out


async def test_the_secondary_controllers_take_the_flag_or_keep_kuberays_fixed_count() -> None:
    seen = await _workers(_settings(SECONDARY_GATES, reconcile_concurrency=3))
    assert seen == {
        "raycluster": (3, None),
        "networkpolicy": (3, None),
        "raycluster-mtls": (1, None),  # KubeRay passes no flag to it: controller-runtime's 1
        "rayservice": (3, None),
        "rayjob": (3, None),
    }


async def test_under_auto_every_controller_adapts_the_secondary_ones_included() -> None:
    gates = {**SECONDARY_GATES, "RayCronJob": True}
    settings = _settings(gates, adaptive_concurrency=True, max_reconcile_concurrency=7)
    seen = await _workers(settings)
    assert set(seen) == {blueprint.name for blueprint in CATALOG}
    assert all(value == (1, 7) for value in seen.values()), seen


async def test_each_controller_records_its_metrics_under_its_own_name() -> None:
    settings = _settings(SECONDARY_GATES)
    metrics = OperatorMetrics()
    async with new_client(NOWHERE, settings, metrics) as client:
        built = build_operator(client, settings, metrics)
    text = metrics.render().decode()
    for name in built.controllers:
        assert f'controller_runtime_reconcile_errors_total{{controller="{name}"}}' in text


async def test_a_kind_asked_for_by_name_starts_its_primary_whatever_its_gate() -> None:
    settings = _settings({"RayCronJob": False, "RayClusterNetworkPolicy": True})
    metrics = OperatorMetrics()
    async with new_client(NOWHERE, settings, metrics) as client:
        built = build_operator(client, settings, metrics, kinds=("RayCluster", "RayCronJob"))
        plain = build_operator(client, settings, OperatorMetrics())
    assert list(built.controllers) == ["raycluster", "networkpolicy", "raycronjob"]
    assert set(built.primaries) == {"RayCluster", "RayCronJob"}
    assert "raycronjob" not in plain.controllers  # rayop run: the gate decides


async def test_an_unknown_kind_is_refused_with_the_choices() -> None:
    settings = _settings({})
    async with new_client(NOWHERE, settings, OperatorMetrics()) as client:
        with pytest.raises(ValueError, match="RayWidget"):
            build_operator(client, settings, OperatorMetrics(), kinds=("RayWidget",))  # type: ignore[arg-type]


async def test_no_endpointslice_is_cached_until_a_rayservice_pass_reads_one() -> None:
    """controller-runtime starts a kind's informer on its first read: KubeRay, with no
    RayService to serve, never lists or watches EndpointSlices, and neither does rayop."""
    settings = _settings({})
    async with new_client(NOWHERE, settings, OperatorMetrics()) as client:
        built = build_operator(client, settings, OperatorMetrics())
    cached = {str(informer.resource) for informer in built.manager.informers.informers}
    assert str(ENDPOINT_SLICES) not in cached
    assert {str(PODS), str(SERVICES)} <= cached
