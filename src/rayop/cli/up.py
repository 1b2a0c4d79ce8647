"""``rayop up``: the embedded control plane and the operator in one process (the main job).

It starts an embedded Kubernetes-compatible API server with a simulated kubelet, installs the
ray.io CRDs and the Gateway API CRDs (:func:`install_gateway_api`), writes a kubeconfig, and
runs the operator against it, so that

    kubectl --kubeconfig <path> apply -f ray-cluster.sample.yaml
    kubectl --kubeconfig <path> get rayclusters

shows a ready cluster within seconds. Ctrl-C stops everything; ``--state`` keeps the objects.

The operator reaches Ray dashboards directly, as KubeRay does by default (no API server
request); the embedded plane resolves the head services' cluster DNS names for it
(:class:`~rayop.sim.dashboard.service_dns.ServiceDns`), which the banner says.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
from rayop.cli.control_plane_flags import ControlPlaneFlags, PodReadyDelayOpt
from rayop.cli.extras import require_extras
from rayop.cli.operator_flags import CONSOLE_LOGS, KUBERAY_DEFAULTS, LogFlags, OperatorFlags
from rayop.cli.option_groups import expand_option_groups

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings
    from rayop.kube.config import KubeConfig
    from rayop.sim.controlplane import EmbeddedControlPlane

log = logging.getLogger("rayop.up")


async def install_crds(config: KubeConfig) -> None:
    """Creates (or replaces) the RayCluster, RayJob and RayService CRDs."""
    from rayop.api.crds import build_crds
    from rayop.kube.client import KubeClient
    from rayop.kube.errors import AlreadyExists
    from rayop.kube.resources import CRDS

    async with KubeClient(config, qps=-1) as client:
        for crd in build_crds():
            try:
                await client.create(CRDS, crd)
            except AlreadyExists:
                current = await client.get(CRDS, crd["metadata"]["name"])
                crd = {
                    **crd,
                    "metadata": {
                        **crd["metadata"],
                        "resourceVersion": current["metadata"]["resourceVersion"],
                    },
                }
                await client.update(CRDS, crd)


async def install_gateway_api(config: KubeConfig) -> None:
    """Creates the Gateway API CRDs (kept when present), from the cache or downloaded into it
    (:mod:`rayop.cli.gateway_api_crds`); the embedded plane then programs the Gateways of its
    classes ``rayop`` and ``istio``. When they are unavailable it logs one line and goes on."""
    from rayop.cli.gateway_api_crds import CrdsUnavailable, load_crds
    from rayop.kube.client import KubeClient
    from rayop.kube.errors import AlreadyExists
    from rayop.kube.resources import CRDS

    try:
        crds = await asyncio.to_thread(load_crds)
    except CrdsUnavailable as exc:
        log.warning("Gateway API CRDs not installed (incremental upgrades cannot run): %s", exc)
        return
    async with KubeClient(config, qps=-1) as client:
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                await client.create(CRDS, crd)
    log.info("Gateway API CRDs installed; GatewayClasses rayop and istio are programmed")


def _local_url(addr: str) -> str:
    """Turns a bind address (``:8080``, ``127.0.0.1:8080``, ``0.0.0.0:8080``) into a local URL."""
    host, _, port = addr.rpartition(":")
    return f"http://{host if host not in ('', '0.0.0.0', '::') else 'localhost'}:{port}"


def _banner(cp: EmbeddedControlPlane, settings: OperatorSettings) -> str:
    kc = cp.kubeconfig_path
    lines = [
        f"rayop is up: embedded API server at {cp.url}",
        f"  kubeconfig: {kc}",
        f"  export KUBECONFIG={kc}",
        "  rayop samples raycluster | kubectl apply -f - && kubectl get rayclusters",
    ]
    if settings.metrics_addr != "0":
        lines.append(f"  operator metrics: {_local_url(settings.metrics_addr)}/metrics")
    if settings.health_probe_bind_address != "0":
        lines.append(f"  health: {_local_url(settings.health_probe_bind_address)}/readyz")
    lines.append(
        "  Ray dashboards: direct (<head svc>.<ns>.svc.cluster.local names resolved by the "
        "embedded plane)"
        if settings.dashboard_resolver is not None
        else "  Ray dashboards: through the API server's services proxy"
    )
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


async def _up(settings: OperatorSettings, plane: ControlPlaneFlags, pod_ready_delay: float) -> None:
    from rayop.controllers.assembly.run import run_operator
    from rayop.kube.client import KubeClient
    from rayop.kube.config import load_kubeconfig
    from rayop.runtime.manager import Manager
    from rayop.sim.dashboard.service_dns import ServiceDns
    from rayop.sim.nodes.kubelet import KubeletConfig

    kubelet = KubeletConfig(ready_delay=pod_ready_delay)
    async with plane.control_plane(kubelet=kubelet, tls=True) as cp:  # tokens need HTTPS
        config = await load_kubeconfig(str(cp.kubeconfig_path))
        await install_crds(config)
        await install_gateway_api(config)
        dns = ServiceDns(cp.resolve_service_url)
        settings = dataclasses.replace(settings, use_kubernetes_proxy=False, dashboard_resolver=dns)
        if settings.options.enable_webhooks:  # the plane calls the operator's webhooks directly
            webhooks = dataclasses.replace(
                settings.webhooks, host="127.0.0.1", port=0, register_url="https://127.0.0.1:0"
            )
            settings = dataclasses.replace(settings, webhooks=webhooks)

        async def announce(_: Manager[KubeClient]) -> None:
            typer.echo(_banner(cp, settings))

        await run_operator(config, settings, on_ready=announce)


@app.command("up")
@expand_option_groups
def up(
    plane: ControlPlaneFlags,
    pod_ready_delay: PodReadyDelayOpt = 0.5,
    operator: OperatorFlags = KUBERAY_DEFAULTS,
    logs: LogFlags = CONSOLE_LOGS,
    batch_scheduler: Annotated[
        str,
        typer.Option(
            "--batch-scheduler",
            help="volcano, yunikorn, kai-scheduler or scheduler-plugins (their CRDs: apply them).",
        ),
    ] = "",
) -> None:
    """Start an embedded control plane and the operator in one process."""
    require_extras("rayop up", "sim")
    from rayop.controllers.batchscheduler.registry import (
        BatchSchedulerConfigError,
        check_batch_scheduler_config,
    )

    logs.configure()
    settings = dataclasses.replace(operator.settings(), enable_leader_election=False)  # one process
    try:
        scheduler = check_batch_scheduler_config(
            enable=False,
            scheduler=batch_scheduler,
            kubernetes_was=settings.options.feature_gates.kubernetes_was,
        )
    except BatchSchedulerConfigError as exc:
        raise typer.BadParameter(f"batch scheduler configs validation failed: {exc}") from exc
    options = dataclasses.replace(settings.options, batch_scheduler=scheduler)
    settings = dataclasses.replace(settings, options=options)
    asyncio.run(_up(settings, plane, pod_ready_delay))
