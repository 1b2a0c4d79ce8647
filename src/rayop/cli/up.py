"""``rayop up``: the embedded control plane and the operator in one process (the main job).

It starts an embedded Kubernetes-compatible API server with a simulated kubelet, installs the
ray.io CRDs, writes a kubeconfig, and runs the operator against it, so that

    kubectl --kubeconfig <path> apply -f ray-cluster.sample.yaml
    kubectl --kubeconfig <path> get rayclusters

shows a ready cluster within seconds. Ctrl-C stops everything; ``--state`` keeps the objects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
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


def _banner(cp: EmbeddedControlPlane, settings: OperatorSettings) -> str:
    kc = cp.kubeconfig_path
    lines = [
        f"rayop is up: embedded API server at {cp.url}",
        f"  kubeconfig: {kc}",
        f"  export KUBECONFIG={kc}",
        "  kubectl apply -f ray-cluster.sample.yaml && kubectl get rayclusters",
    ]
    if settings.metrics_addr != "0":
        lines.append(f"  operator metrics: http://localhost{settings.metrics_addr}/metrics")
    if settings.health_probe_bind_address != "0":
        lines.append(f"  health: http://localhost{settings.health_probe_bind_address}/readyz")
    lines.append("  Ctrl-C stops it.")
    return "\n".join(lines)


async def _up(
    settings: OperatorSettings,
    *,
    kubeconfig_out: Path | None,
    state: Path | None,
    host: str,
    port: int,
    pod_ready_delay: float,
) -> None:
    from rayop.controllers.operator import run_operator
    from rayop.kube.config import load_kubeconfig
    from rayop.runtime.manager import Manager
    from rayop.sim.controlplane import EmbeddedControlPlane
    from rayop.sim.nodes.kubelet import KubeletConfig

    kubelet = KubeletConfig(ready_delay=pod_ready_delay)
    async with EmbeddedControlPlane(
        host=host,
        port=port,
        state_path=state,
        kubeconfig_path=kubeconfig_out,
        kubelet=kubelet,
        tls=True,  # kubectl sends a bearer token only over HTTPS
    ) as cp:
        config = await load_kubeconfig(str(cp.kubeconfig_path))
        await install_crds(config)

        async def announce(_: Manager) -> None:
            typer.echo(_banner(cp, settings))

        await run_operator(config, settings, on_ready=announce)


@app.command("up")
def up(
    kubeconfig_out: Annotated[
        Path | None, typer.Option("--kubeconfig-out", help="Where to write the kubeconfig.")
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option("--state", help="SQLite file that keeps every object across runs."),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="Address of the embedded API server.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port of the embedded API server (0: any free).")
    ] = 0,
    pod_ready_delay: Annotated[
        float, typer.Option("--pod-ready-delay", help="Simulated seconds from Running to Ready.")
    ] = 0.5,
    reconcile_concurrency: ConcurrencyOpt = 1,
    metrics_addr: MetricsAddrOpt = ":8080",
    health_probe_bind_address: HealthAddrOpt = ":8082",
    qps: QpsOpt = 100.0,
    burst: BurstOpt = 200,
    use_priority_queue: PriorityQueueOpt = "true",
    feature_gates: FeatureGatesOpt = "",
    log_level: LogLevelOpt = "info",
    log_format: LogFormatOpt = "console",
) -> None:
    """Start an embedded control plane and the operator in one process."""
    configure_logging(log_level, log_format)
    settings = shared_settings(
        reconcile_concurrency=reconcile_concurrency,
        use_priority_queue=use_priority_queue,
        metrics_addr=metrics_addr,
        health_probe_bind_address=health_probe_bind_address,
        qps=qps,
        burst=burst,
        feature_gates=feature_gates,
    )
    settings = dataclasses.replace(settings, enable_leader_election=False)  # one process only
    asyncio.run(
        _up(
            settings,
            kubeconfig_out=kubeconfig_out,
            state=state,
            host=host,
            port=port,
            pod_ready_delay=pod_ready_delay,
        )
    )
