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
from rayop.cli.operator_flags import (
    BurstOpt,
    ConcurrencyOpt,
    FeatureGatesOpt,
    HealthAddrOpt,
    LogFormatOpt,
    LogLevelOpt,
    MetricsAddrOpt,
    PriorityQueueOpt,
    QpsOpt,
    configure_logging,
    shared_settings,
)

if TYPE_CHECKING:
    from rayop.controllers.operator import OperatorSettings

log = logging.getLogger("rayop.run")


@app.command("run")
def run(
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig",
            help="Path to a kubeconfig; default: KUBECONFIG, ~/.kube/config, in-cluster.",
        ),
    ] = None,
    reconcile_concurrency: ConcurrencyOpt = 1,
    metrics_addr: MetricsAddrOpt = ":8080",
    health_probe_bind_address: HealthAddrOpt = ":8082",
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
    qps: QpsOpt = 100.0,
    burst: BurstOpt = 200,
    use_priority_queue: PriorityQueueOpt = "true",
    feature_gates: FeatureGatesOpt = "",
    log_level: LogLevelOpt = "info",
    log_format: LogFormatOpt = "json",
) -> None:
    """Run the RayCluster, RayJob and RayService controllers against a Kubernetes API server."""
    from rayop.kube.config import ConfigError
    from rayop.runtime.manager import LeadershipLost

    configure_logging(log_level, log_format)
    settings = dataclasses.replace(
        shared_settings(
            reconcile_concurrency=reconcile_concurrency,
            use_priority_queue=use_priority_queue,
            metrics_addr=metrics_addr,
            health_probe_bind_address=health_probe_bind_address,
            qps=qps,
            burst=burst,
            feature_gates=feature_gates,
        ),
        enable_leader_election=parse_bool(enable_leader_election, flag="--enable-leader-election"),
        leader_election_namespace=leader_election_namespace or None,
        watch_namespaces=parse_namespaces(watch_namespace),
    )
    try:
        asyncio.run(_run(kubeconfig, settings))
    except LeadershipLost:
        log.error("leader election lost; exiting")
        sys.exit(1)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)


async def _run(kubeconfig: str | None, settings: OperatorSettings) -> None:
    from rayop.controllers.operator import run_operator
    from rayop.kube.config import load_config

    config = await load_config(kubeconfig=kubeconfig)
    log.info(
        "starting rayop operator",
        extra={"server": config.server, "reconcileConcurrency": settings.reconcile_concurrency},
    )
    await run_operator(config, settings)
