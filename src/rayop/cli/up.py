"""``rayop up``: the embedded control plane and the operator in one process (the main job).

It starts an embedded Kubernetes-compatible API server with a simulated kubelet, installs the
ray.io CRDs and the Gateway API CRDs (:func:`install_gateway_api`), runs the operator against it
and, once every CRD is Established and the operator's caches have synced, writes the kubeconfig
(``--kubeconfig-out``, atomically) and prints a banner, so that

    kubectl --kubeconfig <path> apply -f ray-cluster.sample.yaml
    kubectl --kubeconfig <path> get rayclusters

shows a ready cluster within seconds. Ctrl-C stops everything; ``--state`` keeps the objects.
A start that fails leaves no kubeconfig; one whose address is taken says so in one line naming
the flag to change (:mod:`rayop.cli.bind_errors`), exit status 2.

It takes every operator flag ``rayop run`` takes (:mod:`rayop.cli.operator_setup`), with
defaults for a laptop: metrics and probes on loopback, on ports Ray does not use
(:data:`~rayop.cli.operator_flags.LOCAL_DEFAULTS`), and no leader election.

The operator reaches Ray dashboards directly, as KubeRay does by default (no API server
request); the embedded plane resolves the head services' cluster DNS names for it
(:class:`~rayop.sim.dashboard.service_dns.ServiceDns`), which the banner says.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
from typing import TYPE_CHECKING

import typer

from rayop.cli.app import app
from rayop.cli.bind_errors import API_SERVER, as_bind_error, bind_error_line
from rayop.cli.control_plane_flags import ControlPlaneFlags, PodReadyDelayOpt
from rayop.cli.crd_install import install_crds
from rayop.cli.extras import require_extras
from rayop.cli.kubeconfig_file import PublishedFile
from rayop.cli.kuberay_flags import (
    KUBERAY_FEATURE_DEFAULTS,
    KUBERAY_LOG_DEFAULTS,
    KubeRayFeatureFlags,
    KubeRayLogFlags,
)
from rayop.cli.operator_flags import CONSOLE_LOGS, LOCAL_DEFAULTS, LogFlags, OperatorFlags
from rayop.cli.operator_setup import operator_settings
from rayop.cli.option_groups import expand_option_groups
from rayop.cli.replica_flags import ONE_PROCESS_REPLICA, ReplicaFlags

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings
    from rayop.kube.config import KubeConfig
    from rayop.sim.controlplane import EmbeddedControlPlane

log = logging.getLogger("rayop.up")


class KubeconfigNotWritten(Exception):
    """``--kubeconfig-out`` could not be written once the operator was ready."""


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


def _local_url(addr: str, bound: int | None) -> str:
    """Turns a bind address (``:8080``, ``127.0.0.1:8080``, ``0.0.0.0:8080``) into a local URL,
    with the port the server bound (``bound``; the address's own when None), so ``:0`` shows the
    port the system chose."""
    host, _, port = addr.rpartition(":")
    local = host if host not in ("", "0.0.0.0", "::") else "localhost"
    return f"http://{local}:{bound if bound is not None else port}"


def _banner(
    cp: EmbeddedControlPlane, settings: OperatorSettings, kc: str, ports: tuple[int | None, int | None]
) -> str:
    """The ready banner; ``ports`` are the metrics and health servers' bound ports."""
    lines = [
        f"rayop is up: embedded API server at {cp.url}",
        f"  kubeconfig: {kc}",
        f"  export KUBECONFIG={kc}",
        "  rayop samples raycluster | kubectl apply -f - && kubectl get rayclusters",
    ]
    if settings.metrics_addr != "0":
        lines.append(f"  operator metrics: {_local_url(settings.metrics_addr, ports[0])}/metrics")
    if settings.health_probe_bind_address != "0":
        health = _local_url(settings.health_probe_bind_address, ports[1])
        lines.append(f"  health: {health}/readyz")
    lines.append(
        "  Ray dashboards: direct (<head svc>.<ns>.svc.cluster.local names resolved by the "
        "embedded plane)"
        if settings.dashboard_resolver is not None
        else "  Ray dashboards: through the API server's services proxy"
    )
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


async def _up(
    settings: OperatorSettings,
    plane: ControlPlaneFlags,
    pod_ready_delay: float,
    kubeconfig: PublishedFile | None,
) -> None:
    """Runs the plane and the operator until Ctrl-C; ``kubeconfig`` is published once ready and
    withdrawn again if the run fails."""
    from rayop.sim.nodes.kubelet import KubeletConfig

    kubelet = KubeletConfig(ready_delay=pod_ready_delay)
    # The plane's own kubeconfig is a temporary file; --kubeconfig-out is written once ready.
    private = dataclasses.replace(plane, kubeconfig_out=None)
    cp = private.control_plane(kubelet=kubelet, tls=True)  # tokens need HTTPS
    try:
        await cp.start()
    except OSError as exc:
        bind = as_bind_error(exc, API_SERVER, plane.host, plane.port)
        if bind is None:
            raise
        raise bind from exc
    try:
        await _operate(cp, settings, kubeconfig)
    except BaseException:
        if kubeconfig is not None:
            kubeconfig.withdraw()
        raise
    finally:
        await cp.stop()


async def _operate(
    cp: EmbeddedControlPlane, settings: OperatorSettings, kubeconfig: PublishedFile | None
) -> None:
    from rayop.controllers.assembly.run import run_operator
    from rayop.kube.client import KubeClient
    from rayop.kube.config import load_kubeconfig
    from rayop.runtime.manager import Manager
    from rayop.sim.dashboard.service_dns import ServiceDns

    config = await load_kubeconfig(str(cp.kubeconfig_path))
    await install_crds(config)  # returns once every CRD is Established
    await install_gateway_api(config)
    if not settings.use_kubernetes_proxy:
        settings = dataclasses.replace(
            settings, dashboard_resolver=ServiceDns(cp.resolve_service_url)
        )
    if settings.options.enable_webhooks:  # the plane calls the operator's webhooks directly
        webhooks = dataclasses.replace(
            settings.webhooks, host="127.0.0.1", port=0, register_url="https://127.0.0.1:0"
        )
        settings = dataclasses.replace(settings, webhooks=webhooks)
    failures: list[KubeconfigNotWritten] = []

    async def announce(manager: Manager[KubeClient]) -> None:  # the caches have synced
        path = cp.kubeconfig_path
        if kubeconfig is not None:
            try:
                kubeconfig.publish(cp.kubeconfig_text(cp.token))
            except OSError as exc:
                failures.append(KubeconfigNotWritten(f"cannot write {kubeconfig.path}: {exc}"))
                manager.request_stop()
                return
            path = str(kubeconfig.path)
        metrics, health = manager.metrics_server, manager.health_server
        ports = (metrics.port if metrics else None, health.port if health else None)
        typer.echo(_banner(cp, settings, path, ports))

    await run_operator(config, settings, on_ready=announce)
    if failures:
        raise failures[0]


@app.command("up")
@expand_option_groups
def up(
    plane: ControlPlaneFlags,
    pod_ready_delay: PodReadyDelayOpt = 0.5,
    operator: OperatorFlags = LOCAL_DEFAULTS,
    replica: ReplicaFlags = ONE_PROCESS_REPLICA,
    logs: LogFlags = CONSOLE_LOGS,
    kuberay_logs: KubeRayLogFlags = KUBERAY_LOG_DEFAULTS,
    kuberay: KubeRayFeatureFlags = KUBERAY_FEATURE_DEFAULTS,
) -> None:
    """Start an embedded control plane and the operator in one process.

    It takes every operator flag of rayop run. The kubeconfig (--kubeconfig-out) is written
    atomically, and only once every CRD is Established and the operator's caches have synced:
    a script may wait for the file to appear and apply at once. A start that fails leaves no
    kubeconfig. Metrics and probes listen on 127.0.0.1:28080 and 127.0.0.1:28082 (ports Ray
    does not use; rayop run keeps KubeRay's :8080 and :8082); a taken address stops the start
    with one line naming the flag to change (exit status 2).
    """
    require_extras("rayop up", "sim")
    from rayop.runtime.serving.endpoints import BindError

    settings = operator_settings(operator, replica, logs, kuberay_logs, kuberay)
    kubeconfig = PublishedFile(plane.kubeconfig_out) if plane.kubeconfig_out else None
    try:
        asyncio.run(_up(settings, plane, pod_ready_delay, kubeconfig))
    except BindError as exc:
        typer.echo(bind_error_line(exc), err=True)
        sys.exit(2)
    except KubeconfigNotWritten as exc:
        typer.echo(f"rayop: --kubeconfig-out: {exc}", err=True)
        sys.exit(1)
