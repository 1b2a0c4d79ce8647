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

if TYPE_CHECKING:
    from rayop.controllers.operator import OperatorSettings
    from rayop.controllers.raycluster.options import OperatorOptions

log = logging.getLogger("rayop.run")

# The options shared with `rayop up` are declared once here.
ConcurrencyOpt = Annotated[
    int,
    typer.Option(
        "--reconcile-concurrency",
        min=1,
        help="Workers per controller; the RayCluster, RayJob and RayService controllers each get "
        "this many. It does not change Ray task concurrency.",
    ),
]
MetricsAddrOpt = Annotated[
    str, typer.Option("--metrics-addr", help='Address of /metrics ("0" disables it).')
]
HealthAddrOpt = Annotated[
    str,
    typer.Option(
        "--health-probe-bind-address", help='Address of /healthz and /readyz ("0" disables it).'
    ),
]
QpsOpt = Annotated[
    float, typer.Option("--qps", help="Client-side API request rate; negative disables throttling.")
]
BurstOpt = Annotated[int, typer.Option("--burst", help="Client-side API request burst.")]
PriorityQueueOpt = Annotated[
    str,
    typer.Option(
        "--use-priority-queue",
        help="Use controller-runtime's priority queue (true) or the classic rate-limited queue.",
    ),
]
LogLevelOpt = Annotated[str, typer.Option("--log-level", help="debug, info, warning or error.")]
LogFormatOpt = Annotated[str, typer.Option("--log-format", help="json or console.")]
FeatureGatesOpt = Annotated[
    str, typer.Option("--feature-gates", help="Comma-separated key=value feature gates.")
]


def parse_feature_gates(value: str) -> dict[str, bool]:
    """Parses ``--feature-gates=A=true,B=false``.

    Raises:
        typer.BadParameter: an entry is not ``name=bool``.
    """
    gates: dict[str, bool] = {}
    for entry in filter(None, (e.strip() for e in value.split(","))):
        name, sep, raw = entry.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--feature-gates expects name=bool entries, got {entry!r}")
        gates[name.strip()] = parse_bool(raw, flag=f"--feature-gates {name}")
    return gates


def operator_options(feature_gates: str) -> OperatorOptions:
    """Returns KubeRay's environment options with ``--feature-gates`` applied."""
    from rayop.controllers.raycluster.options import OperatorOptions

    options = OperatorOptions.from_env()
    gates = parse_feature_gates(feature_gates)
    if not gates:
        return options
    known = {f.name: f for f in dataclasses.fields(options.feature_gates)}
    updates: dict[str, bool] = {}
    for name, value in gates.items():
        attr = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
        if attr in known:
            updates[attr] = value
        else:
            log.warning("feature gate %s is not implemented by rayop; ignored", name)
    return dataclasses.replace(
        options, feature_gates=dataclasses.replace(options.feature_gates, **updates)
    )


def configure_logging(level: str, fmt: str) -> None:
    """Sets up the root logger (structured JSON by default).

    Raises:
        typer.BadParameter: an unknown level or format.
    """
    from rayop.runtime.logsetup import configure_logging as configure

    if fmt not in ("json", "console"):
        raise typer.BadParameter(f"--log-format expects json or console, got {fmt!r}")
    try:
        configure(level, "json" if fmt == "json" else "console")
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


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
    """Run the RayCluster operator against a Kubernetes API server."""
    from rayop.controllers.operator import OperatorSettings
    from rayop.kube.config import ConfigError
    from rayop.runtime.manager import LeadershipLost

    configure_logging(log_level, log_format)
    settings = OperatorSettings(
        reconcile_concurrency=reconcile_concurrency,
        use_priority_queue=parse_bool(use_priority_queue, flag="--use-priority-queue"),
        metrics_addr=metrics_addr,
        health_probe_bind_address=health_probe_bind_address,
        enable_leader_election=parse_bool(enable_leader_election, flag="--enable-leader-election"),
        leader_election_namespace=leader_election_namespace or None,
        watch_namespaces=parse_namespaces(watch_namespace),
        qps=qps,
        burst=burst,
        options=operator_options(feature_gates),
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
