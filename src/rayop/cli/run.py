"""``rayop run``: the operator against any Kubernetes API server, with KubeRay's flags."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
from rayop.cli.bind_errors import bind_error_line
from rayop.cli.kuberay_flags import (
    KUBERAY_FEATURE_DEFAULTS,
    KUBERAY_LOG_DEFAULTS,
    KubeRayFeatureFlags,
    KubeRayLogFlags,
)
from rayop.cli.operator_flags import JSON_LOGS, KUBERAY_DEFAULTS, LogFlags, OperatorFlags
from rayop.cli.operator_setup import operator_settings
from rayop.cli.option_groups import expand_option_groups
from rayop.cli.replica_flags import KUBERAY_REPLICA, ReplicaFlags

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
    replica: ReplicaFlags = KUBERAY_REPLICA,
    logs: LogFlags = JSON_LOGS,
    kuberay_logs: KubeRayLogFlags = KUBERAY_LOG_DEFAULTS,
    kuberay: KubeRayFeatureFlags = KUBERAY_FEATURE_DEFAULTS,
) -> None:
    """Run the RayCluster, RayJob and RayService controllers against a Kubernetes API server."""
    from rayop.runtime.process.collector import collector_paused, tune_collector

    with collector_paused():  # the imports build only what the operator keeps
        import rayop.controllers.assembly.run  # noqa: F401  (imported before the heap is frozen)
        from rayop.controllers.config.startup_checks import StartupCheckError
        from rayop.kube.config import ConfigError
        from rayop.runtime.manager import LeadershipLost
        from rayop.runtime.serving.endpoints import BindError
        from rayop.runtime.sharding.membership import MembershipLost

        settings = operator_settings(operator, replica, logs, kuberay_logs, kuberay)
    tune_collector()
    try:
        asyncio.run(_run(kubeconfig, settings))
    except MembershipLost as exc:
        log.error("%s: this replica's objects go to the others; exiting", exc)
        sys.exit(1)
    except LeadershipLost:
        log.error("leader election lost; exiting")
        sys.exit(1)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except StartupCheckError as exc:
        log.error("%s", exc)
        sys.exit(1)
    except BindError as exc:
        typer.echo(bind_error_line(exc), err=True)
        sys.exit(2)


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
