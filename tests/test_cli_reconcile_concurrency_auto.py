"""``--reconcile-concurrency=auto`` and ``--max-reconcile-concurrency`` reach every controller."""

from __future__ import annotations

import asyncio

import pytest
import typer

from rayop.cli.operator_flags import (
    AUTO_CONCURRENCY,
    OperatorFlags,
    parse_reconcile_concurrency,
)
from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.kube.config import KubeConfig
from rayop.runtime.metrics import OperatorMetrics


def test_the_flag_takes_a_worker_count_or_auto() -> None:
    assert parse_reconcile_concurrency("3") == 3
    assert parse_reconcile_concurrency(" Auto ") == AUTO_CONCURRENCY
    assert parse_reconcile_concurrency(2) == 2
    for bad in ("0", "-1", "many"):
        with pytest.raises(typer.BadParameter, match="a worker count >= 1 or auto"):
            parse_reconcile_concurrency(bad)


def test_auto_makes_the_settings_adaptive_and_a_count_keeps_them_fixed() -> None:
    auto = OperatorFlags(reconcile_concurrency=AUTO_CONCURRENCY, max_reconcile_concurrency=8)
    settings = auto.settings()
    assert (settings.adaptive_concurrency, settings.reconcile_concurrency) == (True, 1)
    assert settings.max_reconcile_concurrency == 8
    fixed = OperatorFlags(reconcile_concurrency=4).settings()
    assert (fixed.adaptive_concurrency, fixed.reconcile_concurrency) == (False, 4)


@pytest.mark.parametrize("adaptive", [False, True])
def test_build_operator_makes_each_controller_adaptive_with_the_ceiling(adaptive: bool) -> None:
    async def main() -> list[tuple[str, int | None, int]]:
        settings = OperatorSettings(
            reconcile_concurrency=3,
            adaptive_concurrency=adaptive,
            max_reconcile_concurrency=6,
            metrics_addr="0",
            health_probe_bind_address="0",
            enable_leader_election=False,
        )
        metrics = OperatorMetrics()
        client = new_client(KubeConfig(server="http://127.0.0.1:9"), settings, metrics)
        async with client:
            controllers = build_operator(client, settings, metrics).controllers
            return [
                (
                    name,
                    controller.adaptive.law.settings.ceiling if controller.adaptive else None,
                    controller.max_concurrent_reconciles,
                )
                for name, controller in controllers.items()
            ]

    seen = asyncio.run(main())
    assert sorted(name for name, _, _ in seen) == ["raycluster", "rayjob", "rayservice"]
    expected = (6, 1) if adaptive else (None, 3)
    assert all((ceiling, limit) == expected for _, ceiling, limit in seen)
