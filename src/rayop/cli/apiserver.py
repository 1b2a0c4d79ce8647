"""``rayop apiserver``: run the embedded control plane in the foreground."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
from rayop.cli.control_plane_flags import ControlPlaneFlags, PodReadyDelayOpt
from rayop.cli.extras import require_extras
from rayop.cli.option_groups import expand_option_groups

if TYPE_CHECKING:
    from rayop.sim.controlplane import EmbeddedControlPlane


def _parse_latency(values: list[str]) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for value in values:
        verb, _, spec = value.partition("=")
        fixed, _, jitter = spec.partition(",")
        try:
            out[verb.strip() or "*"] = (float(fixed or 0), float(jitter or 0))
        except ValueError as exc:
            raise typer.BadParameter(f"expected VERB=FIXED[,JITTER], got {value!r}") from exc
    return out


def _parse_capacity(values: list[str]) -> dict[str, str]:
    from rayop.apimachinery.quantity import parse_quantity
    from rayop.sim.nodes.scheduler import DEFAULT_NODE_CAPACITY

    out = dict(DEFAULT_NODE_CAPACITY)
    for value in values:
        name, _, quantity = value.partition("=")
        try:
            parse_quantity(quantity)
        except ValueError as exc:
            raise typer.BadParameter(f"expected RESOURCE=QUANTITY, got {value!r}") from exc
        if not name.strip():
            raise typer.BadParameter(f"expected RESOURCE=QUANTITY, got {value!r}")
        out[name.strip()] = quantity.strip()
    return out


async def _serve(cp: EmbeddedControlPlane, http_proxy_port: int | None = None) -> None:
    from rayop.sim.dashboard.http_proxy import ClusterHttpProxy
    from rayop.sim.heap import freeze_heap_every

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with cp, contextlib.AsyncExitStack() as stack:
        freezer = asyncio.create_task(freeze_heap_every(), name="heap freezer")
        stack.callback(freezer.cancel)
        typer.echo(cp.kubeconfig_path)
        sys.stdout.flush()
        typer.echo(
            f"rayop apiserver listening on {cp.url}; kubectl --kubeconfig {cp.kubeconfig_path}",
            err=True,
        )
        if http_proxy_port is not None:
            proxy = await stack.enter_async_context(ClusterHttpProxy(cp, port=http_proxy_port))
            typer.echo(
                f"cluster network proxy on {proxy.url}: start an operator that calls dashboards "
                f"directly with HTTP_PROXY={proxy.url}",
                err=True,
            )
        await stop.wait()


@app.command("apiserver")
@expand_option_groups
def apiserver(
    plane: ControlPlaneFlags,
    token: Annotated[
        str | None, typer.Option(help="Bearer token (generated when not given).")
    ] = None,
    pod_pending_delay: Annotated[
        float, typer.Option(help="Seconds until a new pod is scheduled.")
    ] = 0.0,
    pod_running_delay: Annotated[
        float, typer.Option(help="Seconds a scheduled pod stays Pending.")
    ] = 0.1,
    pod_ready_delay: PodReadyDelayOpt = 0.1,
    pod_jitter: Annotated[
        float, typer.Option(help="Random seconds added to each pod delay.")
    ] = 0.0,
    pod_failure_rate: Annotated[float, typer.Option(help="Fraction of pods that fail.")] = 0.0,
    pod_crashloop_rate: Annotated[
        float, typer.Option(help="Fraction of pods that crash-loop.")
    ] = 0.0,
    readiness_probe_factor: Annotated[
        float, typer.Option(help="Scales readiness initialDelaySeconds.")
    ] = 0.0,
    unschedulable_rate: Annotated[
        float, typer.Option(help="Fraction of pods left unschedulable.")
    ] = 0.0,
    job_duration: Annotated[float, typer.Option(help="Seconds a Job's pod runs.")] = 1.0,
    job_failure_rate: Annotated[float, typer.Option(help="Fraction of Job pods that fail.")] = 0.0,
    nodes: Annotated[int, typer.Option(help="Number of simulated nodes.")] = 3,
    node_capacity: Annotated[
        list[str],
        typer.Option(
            help="Each node's capacity of a resource, RESOURCE=QUANTITY (repeatable; e.g. "
            "cpu=8, nvidia.com/gpu=4); the scheduler counts pod requests against it."
        ),
    ] = [],  # noqa: B006
    seed: Annotated[int | None, typer.Option(help="Seed of the kubelet's random outcomes.")] = None,
    watch_delay: Annotated[
        float, typer.Option(help="Seconds each watch event is held back.")
    ] = 0.0,
    conflict_rate: Annotated[
        float, typer.Option(help="Fraction of updates/patches answered 409.")
    ] = 0.0,
    error_429_rate: Annotated[float, typer.Option(help="Fraction of requests answered 429.")] = 0.0,
    error_500_rate: Annotated[float, typer.Option(help="Fraction of requests answered 500.")] = 0.0,
    max_in_flight: Annotated[int | None, typer.Option(help="Cap on concurrent requests.")] = None,
    service_slots: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Serve --latency to this many requests at once; the rest queue (a server at "
            "capacity).",
        ),
    ] = None,
    watch_drop_after_events: Annotated[
        int | None, typer.Option(help="Close watches after N events.")
    ] = None,
    watch_drop_after_seconds: Annotated[
        float | None, typer.Option(help="Close watches after N s.")
    ] = None,
    tls: Annotated[
        bool, typer.Option(help="Serve HTTPS (kubectl sends tokens only over TLS).")
    ] = True,
    latency: Annotated[
        list[str], typer.Option(help="Per-verb latency VERB=FIXED[,JITTER] (repeatable).")
    ] = [],  # noqa: B006
    http_proxy_port: Annotated[
        int | None,
        typer.Option(
            help="Serve an HTTP forward proxy on this loopback port (0: any) through which a "
            "process with HTTP_PROXY set reaches head services by cluster DNS name and pods by "
            "IP (KubeRay without --use-kubernetes-proxy)."
        ),
    ] = None,
) -> None:
    """Run the embedded Kubernetes-compatible control plane until Ctrl-C or SIGTERM.

    Prints the path of the kubeconfig it wrote on the first line of stdout.
    """
    require_extras("rayop apiserver", "sim")
    # The embedded plane is imported only when it runs (`rayop run` never loads it).
    from rayop.sim.apiserver.faults import Faults
    from rayop.sim.nodes.kubelet import KubeletConfig

    kubelet = KubeletConfig(
        pending_delay=pod_pending_delay,
        running_delay=pod_running_delay,
        ready_delay=pod_ready_delay,
        jitter=pod_jitter,
        failure_rate=pod_failure_rate,
        crashloop_rate=pod_crashloop_rate,
        readiness_probe_factor=readiness_probe_factor,
        unschedulable_rate=unschedulable_rate,
        job_duration=job_duration,
        job_failure_rate=job_failure_rate,
        nodes=nodes,
        node_capacity=_parse_capacity(node_capacity),
        seed=seed,
    )
    faults = Faults(
        latency=_parse_latency(latency),
        error_429_rate=error_429_rate,
        error_500_rate=error_500_rate,
        watch_drop_after_events=watch_drop_after_events,
        watch_drop_after_seconds=watch_drop_after_seconds,
        watch_delay=watch_delay,
        conflict_rate=conflict_rate,
        max_in_flight=max_in_flight,
        service_slots=service_slots,
    )
    cp = plane.control_plane(kubelet=kubelet, tls=tls, token=token, faults=faults)
    # The server allocates many short-lived dicts per request; the cyclic collector's default
    # thresholds spend ~40% of the pod-create path rescanning them (measured with pyinstrument).
    gc.set_threshold(50_000, 20, 20)
    asyncio.run(_serve(cp, http_proxy_port))
