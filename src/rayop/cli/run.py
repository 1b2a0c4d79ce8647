"""``rayop run``: the operator against any Kubernetes API server, with KubeRay's flags."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
from rayop.cli.flags import parse_bool, parse_namespaces
from rayop.cli.kuberay_config import (
    apply_configuration,
    log_configuration,
    log_plan_with_configuration,
)
from rayop.cli.kuberay_flags import (
    KUBERAY_FEATURE_DEFAULTS,
    KUBERAY_LOG_DEFAULTS,
    KubeRayFeatureFlags,
    KubeRayLogFlags,
)
from rayop.cli.log_plan import configure_logging
from rayop.cli.operator_flags import JSON_LOGS, KUBERAY_DEFAULTS, LogFlags, OperatorFlags
from rayop.cli.option_groups import expand_option_groups

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings

log = logging.getLogger("rayop.run")


@app.command("run")
@expand_option_groups
def run(
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            help="Path to a kubeconfig; default: KUBECONFIG, ~/.kube/config, in-cluster.",
        ),
    ] = None,
    operator: OperatorFlags = KUBERAY_DEFAULTS,
    enable_leader_election: Annotated[
        str,
        typer.Option(
            "--enable-leader-election", help="Campaign for the leader Lease (true/false)."
        ),
    ] = "true",
    leader_election_namespace: Annotated[
        str,
        typer.Option(
            "--leader-election-namespace", help="Namespace of the Lease; empty: the pod's."
        ),
    ] = "",
    watch_namespace: Annotated[
        str,
        typer.Option("--watch-namespace", help="Comma-separated namespaces to watch; empty: all."),
    ] = "",
    logs: LogFlags = JSON_LOGS,
    kuberay_logs: KubeRayLogFlags = KUBERAY_LOG_DEFAULTS,
    kuberay: KubeRayFeatureFlags = KUBERAY_FEATURE_DEFAULTS,
) -> None:
    """Run the RayCluster, RayJob and RayService controllers against a Kubernetes API server."""
    from rayop.controllers.config.startup_checks import StartupCheckError
    from rayop.kube.config import ConfigError
    from rayop.runtime.manager import LeadershipLost

    config = kuberay.configuration()
    plan = kuberay_logs.plan(log_level=logs.log_level, log_format=logs.log_format)
    configure_logging(log_plan_with_configuration(plan, config))
    if config is not None:
        log_configuration(kuberay.config, config)
    settings = dataclasses.replace(
        operator.settings(),
        use_kubernetes_proxy=kuberay.kubernetes_proxy(),
        enable_leader_election=parse_bool(enable_leader_election, flag="--enable-leader-election"),
        leader_election_namespace=leader_election_namespace or None,
        watch_namespaces=parse_namespaces(watch_namespace),
    )
    if config is not None:
        settings = apply_configuration(settings, config)
    scheduler = kuberay.check(config, kubernetes_was=settings.options.feature_gates.kubernetes_was)
    settings = dataclasses.replace(
        settings, options=dataclasses.replace(settings.options, batch_scheduler=scheduler)
    )
    from rayop.runtime.process.collector import tune_collector

    tune_collector()
    try:
        asyncio.run(_run(kubeconfig, settings))
    except LeadershipLost:
        log.error("leader election lost; exiting")
        sys.exit(1)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except StartupCheckError as exc:
        log.error("%s", exc)
        sys.exit(1)


async def _run(kubeconfig: str | None, settings: OperatorSettings) -> None:
    from rayop.controllers.assembly.run import run_operator
    from rayop.controllers.config.startup_checks import run_startup_checks
    from rayop.kube.client import KubeClient
    from rayop.kube.config import load_config
    from rayop.runtime.process.heap_trim import trim_heap_periodically

    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config) as client:
        await run_startup_checks(client, settings.options)
    log.info(
        "starting rayop operator",
        extra={
            "server": config.server,
            "reconcileConcurrency": (
                "auto" if settings.adaptive_concurrency else settings.reconcile_concurrency
            ),
        },
    )
    # Free heap pages go back to the OS after bursts, as Go's scavenger does for KubeRay.
    trimmer = asyncio.create_task(trim_heap_periodically(), name="heap trim")
    try:
        await run_operator(config, settings)
    finally:
        trimmer.cancel()
        await asyncio.wait([trimmer])
