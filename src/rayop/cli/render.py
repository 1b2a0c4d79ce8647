"""``rayop render -f FILE``: the objects the operator would create for a file's RayClusters,
RayJobs and RayServices, as YAML, with no cluster.

It takes the operator flags of ``rayop run`` (``--config`` for KubeRay's Configuration file,
``--feature-gates``, the batch scheduler, ...; :mod:`rayop.cli.operator_setup` builds the
settings as for ``rayop run``), starts the embedded control plane in this process, runs the
operator on it and prints every object the operator created for the file's objects
(:func:`rayop.preview.rendering.render_objects`): Services, Pods, Jobs, PodGroups, Gateways and
routes, the RayCluster of a RayJob or RayService. The controllers' own code creates them; nothing
is rendered by a second implementation.

Exit status: 0 rendered; 1 some object did not settle within ``--timeout`` (what was created so
far is printed, and a line per object on stderr); 2 bad input (not YAML, not a ray.io object,
refused by the operator's validation or the CRD schema: one line per object naming it and the
reason).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
from rayop.cli.extras import require_extras
from rayop.cli.kuberay_flags import (
    KUBERAY_FEATURE_DEFAULTS,
    KUBERAY_LOG_DEFAULTS,
    KubeRayFeatureFlags,
)
from rayop.cli.operator_flags import KUBERAY_DEFAULTS, LogFlags, OperatorFlags
from rayop.cli.operator_setup import operator_settings
from rayop.cli.option_groups import expand_option_groups
from rayop.cli.replica_flags import KUBERAY_REPLICA

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings
    from rayop.preview.manifests import Manifests
    from rayop.preview.rendering import Rendered

QUIET_LOGS = LogFlags(log_level="error", log_format="console")
"""Render's logging: errors only, on stderr (stdout is the YAML)."""

FileOpt = Annotated[
    Path,
    typer.Option(
        "-f", "--filename", help="The manifest: RayClusters, RayJobs, RayServices ('-': stdin)."
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", help="Seconds to wait for every object to settle."),
]


def read_input(path: Path) -> str:
    """The file's text (stdin for ``-``); exits 2 with one line when it cannot be read."""
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        typer.echo(f"rayop: {path}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from exc


def checked_manifests(text: str, source: str, settings: OperatorSettings) -> Manifests:
    """The file's objects; exits 2 with a line per problem when any is bad or refused."""
    from rayop.preview.manifests import BadInput, read_manifests, refusal

    try:
        manifests = read_manifests(text, source)
    except BadInput as exc:
        _fail(exc.problems)
    gates = settings.options.feature_gates
    refused = [r for r in (refusal(obj, gates) for obj in manifests.ray) if r]
    if refused:
        _fail(refused)
    return manifests


def _fail(problems: list[str]) -> None:
    for problem in problems:
        typer.echo(f"rayop: {problem}", err=True)
    raise typer.Exit(2)


async def _render(settings: OperatorSettings, manifests: Manifests, timeout: float) -> Rendered:
    from rayop.cli.crd_install import install_crds
    from rayop.cli.up import install_gateway_api
    from rayop.kube.config import KubeConfig
    from rayop.preview.rendering import render_objects
    from rayop.sim.controlplane import EmbeddedControlPlane
    from rayop.sim.dashboard.service_dns import ServiceDns
    from rayop.sim.nodes.kubelet import KubeletConfig

    kubelet = KubeletConfig(
        pending_delay=0.02, running_delay=0.05, ready_delay=0.05, delete_delay=0.05
    )
    async with EmbeddedControlPlane(kubelet=kubelet) as cp:
        config = KubeConfig.for_server(cp.url, token=cp.token)
        await install_crds(config)
        await install_gateway_api(config)
        if not settings.use_kubernetes_proxy:
            resolver = ServiceDns(cp.resolve_service_url)
            settings = dataclasses.replace(settings, dashboard_resolver=resolver)
        return await render_objects(config, settings, manifests, timeout=timeout)


@app.command("render")
@expand_option_groups
def render(
    filename: FileOpt,
    timeout: TimeoutOpt = 60.0,
    operator: OperatorFlags = KUBERAY_DEFAULTS,
    logs: LogFlags = QUIET_LOGS,
    kuberay: KubeRayFeatureFlags = KUBERAY_FEATURE_DEFAULTS,
) -> None:
    """Print as YAML what the operator would create for a file's RayClusters, RayJobs and
    RayServices (Services, Pods, Jobs, PodGroups, Gateways, routes), with no cluster.

    It takes the operator flags of rayop run (--config, --feature-gates, ...) and runs the
    operator on an embedded control plane in this process. Exit 2 on bad input, 1 when an
    object did not settle within --timeout.
    """
    require_extras("rayop render", "sim")
    import yaml

    from rayop.preview.manifests import BadInput

    settings = operator_settings(operator, KUBERAY_REPLICA, logs, KUBERAY_LOG_DEFAULTS, kuberay)
    manifests = checked_manifests(read_input(filename), str(filename), settings)
    try:
        rendered = asyncio.run(_render(settings, manifests, timeout))
    except BadInput as exc:
        _fail(exc.problems)
    typer.echo(
        yaml.safe_dump_all(rendered.objects, explicit_start=True, sort_keys=False, width=1000),
        nl=False,
    )
    for line in rendered.unsettled:
        typer.echo(f"rayop: {line} (not settled after {timeout:g}s)", err=True)
    if rendered.unsettled:
        raise typer.Exit(1)
