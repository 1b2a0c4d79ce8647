"""Benchmark: idle CPU at 10,000 x 3, each operator on the SAME converged clusters (not a test).

Issue 33 part 1's idle target at a size where KubeRay v1.7.0 does not converge from scratch in a
session (``benchmarks/side_by_side_embedded.py``: about 36 minutes for 10,000 x 3 at c=1), so its
idle window there was never idle. Here one embedded plane (``rayop apiserver`` with TLS, pods
Running and Ready 1 s after creation, as ``side_by_side_embedded.py`` starts it) holds one fleet
for every window, and the operators take it over one after another:

1. the first operator of ``--operators`` (say rayop) meets N RayClusters of a head and W
   workers until every one is ready (under ``--lock``), then its idle window of
   ``--idle-seconds`` is sampled. With ``--namespaces 1`` (the default) ``rayop bench
   --external-operator`` creates them in its one namespace; with ``--namespaces K`` this script
   creates them spread round-robin over K namespaces (64 creates in flight) and polls until
   every one is ready, since a controller-runtime cache lists a namespace's objects by walking
   all of them (``pkg/cache/internal/cache_reader.go``), so how a fleet is spread changes what
   KubeRay's passes cost;
2. it is stopped (SIGTERM), and the next operator starts on the same plane with the same flags
   (``--reconcile-concurrency C --qps Q --burst B``, leader election off). Its warm-up lasts until
   its RayCluster controller has run N passes (``controller_runtime_reconcile_total``), that is,
   until it could have met every cluster once; then its idle window is sampled;
3. and so on for each later operator (``rayop,kuberay,rayop`` ends with rayop taking the fleet
   back, so both operators have a window after a takeover).

Per window: the operator's CPU (s, % of a core, ms per cluster per minute), its RayCluster passes
and CPU per pass, its requests by HTTP method, its RSS at the end, and the plane's CPU; per
takeover, the warm-up's seconds, CPU and passes. Run::

    PYTHONPATH=src .venv/bin/python benchmarks/idle_takeover.py --lock /tmp/rayop-heavy.lock \\
        --clusters 10000 --workers 3 --operators rayop,kuberay,rayop --idle-seconds 600 \\
        [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from process_sampler import CpuSampler  # benchmarks/, beside this script
from scale_curve import cpu_seconds, start_apiserver, stop  # benchmarks/, beside this script
from side_by_side import (  # benchmarks/, beside this script
    OPERATORS,
    default_kuberay,
    exit_on_sigterm,
    heavy_lock,
    idle_phase,
    install_ray_crds,
    operator_requests,
    run_bench,
    wait_for_metrics,
    wait_until_started,
)
from side_by_side_embedded import start_operator  # benchmarks/, beside this script

from rayop.bench.readiness import READY_STATE
from rayop.bench.scenarios import raycluster
from rayop.cli.realcluster import free_port
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import NAMESPACES, RAY_CLUSTERS

PASSES = "reconcile raycluster"
""":func:`side_by_side.operator_requests`' key for the RayCluster controller's passes."""

CREATES_IN_FLIGHT = 64


def spread(clusters: int, namespaces: int) -> list[tuple[str, str]]:
    """The fleet's ``(namespace, name)`` pairs: cluster i in namespace i mod K."""
    return [(f"idle-takeover-{i % namespaces}", f"rc-{i}") for i in range(clusters)]


async def create_spread(kubeconfig: Path, workers: int, fleet: list[tuple[str, str]]) -> None:
    """Creates the namespaces and the RayClusters of ``fleet``, at most
    :data:`CREATES_IN_FLIGHT` at a time; blocks until every create was answered."""
    config = await load_config(kubeconfig=str(kubeconfig))
    async with KubeClient(config, qps=-1, user_agent="rayop-idle-takeover") as client:
        for namespace in sorted({ns for ns, _ in fleet}):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        gate = asyncio.Semaphore(CREATES_IN_FLIGHT)

        async def one(namespace: str, name: str) -> None:
            async with gate:
                body = raycluster(name, workers, namespace=namespace)
                await client.create(RAY_CLUSTERS, body, namespace=namespace)

        await asyncio.gather(*(one(ns, name) for ns, name in fleet))


async def count_ready(kubeconfig: Path) -> int:
    """The RayClusters of every namespace whose status says ``ready``."""
    config = await load_config(kubeconfig=str(kubeconfig))
    async with KubeClient(config, qps=-1, user_agent="rayop-idle-takeover") as client:
        items = (await client.list(RAY_CLUSTERS))["items"]
    return sum((item.get("status") or {}).get("state") == READY_STATE for item in items)


def create_and_wait(
    proc: subprocess.Popen[bytes], kubeconfig: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Creates the fleet spread over ``args.namespaces`` and polls every 5 s until all are
    ready (``args.timeout`` s at most); returns the seconds and the operator's CPU."""
    process = psutil.Process(proc.pid)
    cpu0, started = cpu_seconds(process), time.monotonic()
    asyncio.run(create_spread(kubeconfig, args.workers, spread(args.clusters, args.namespaces)))
    ready = 0
    while time.monotonic() - started < args.timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited while creating (code {proc.returncode})")
        ready = asyncio.run(count_ready(kubeconfig))
        if ready >= args.clusters:
            break
        time.sleep(5.0)
    return {
        "seconds_until_all_ready": time.monotonic() - started,
        "ready": ready,
        "operator_cpu_seconds": cpu_seconds(process) - cpu0,
    }


def warm_up(
    proc: subprocess.Popen[bytes], url: str, clusters: int, timeout: float
) -> dict[str, Any]:
    """Blocks until the operator's RayCluster controller has run ``clusters`` passes (polled
    every 5 s), at most ``timeout`` s; returns the wait's seconds, the operator's CPU and the
    passes counted when it ended."""
    process = psutil.Process(proc.pid)
    cpu0, started = cpu_seconds(process), time.monotonic()
    passes = 0.0
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited while warming up (code {proc.returncode})")
        passes = operator_requests(url).get(PASSES, 0.0)
        if passes >= clusters:
            break
        time.sleep(5.0)
    return {
        "seconds": time.monotonic() - started,
        "cpu_seconds": cpu_seconds(process) - cpu0,
        "passes": passes,
        "complete": passes >= clusters,
    }


def window(
    operator: str, role: str, proc: subprocess.Popen[bytes], url: str, server: psutil.Process,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Samples one idle window; returns it with the plane's CPU and the CPU per pass."""
    server0 = cpu_seconds(server)
    idle: dict[str, Any] = dict(idle_phase(proc, url, args.idle_seconds, args.clusters))
    idle["apiserver_cpu_seconds"] = cpu_seconds(server) - server0
    idle["load_average"] = os.getloadavg()
    passes = idle.get(f"{PASSES} (idle)", 0.0)
    idle["cpu_ms_per_pass"] = 1000.0 * idle["cpu_seconds"] / passes if passes else None
    return {"operator": operator, "role": role, "idle": idle}  # fmt: skip


def run(operators: list[str], args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Creates the fleet with the first operator, then hands it to each next one; blocks;
    returns one entry per operator in turn."""
    workdir.mkdir(parents=True)
    plane, kubeconfig = start_apiserver(workdir, None, tls=True)
    server = psutil.Process(plane.pid)
    asyncio.run(install_ray_crds(str(kubeconfig)))
    out: list[dict[str, Any]] = []
    try:
        for turn, operator in enumerate(operators):
            port = free_port()
            url = f"http://127.0.0.1:{port}/metrics"
            log_path = workdir / f"{turn}-{operator}.log"
            with log_path.open("wb") as log:
                proc = start_operator(operator, args, kubeconfig, log, port)
                try:
                    wait_for_metrics(url, proc, timeout=args.timeout)
                    wait_until_started(log_path, proc, timeout=args.timeout)
                    if turn == 0:
                        lock = heavy_lock(args.lock)
                        try:
                            if args.namespaces > 1:
                                created = create_and_wait(proc, kubeconfig, args)
                            else:
                                sampler = CpuSampler(
                                    {"operator": proc.pid, "apiserver": plane.pid}
                                )
                                created = run_bench(
                                    proc, url, kubeconfig, args.concurrency, args,
                                    workdir / "bench.json", sampler,
                                )  # fmt: skip
                        finally:
                            if lock is not None:
                                lock.close()
                        entry = window(operator, "created", proc, url, server, args)
                        entry["creation"] = {
                            k: created.get(k)
                            for k in ("seconds_until_all_ready", "pod_creates",
                                      "duplicate_pod_creates", "operator_cpu_seconds")
                        }  # fmt: skip
                    else:
                        warm = warm_up(proc, url, args.clusters, args.timeout)
                        entry = window(operator, "took over", proc, url, server, args)
                        entry["warm_up"] = warm
                    out.append(entry)
                    report(entry, args.clusters)
                    if args.json is not None:
                        args.json.write_text(json.dumps(out, indent=2))
                finally:
                    stop(proc)
    finally:
        stop(plane)
    return out


def report(entry: dict[str, Any], clusters: int) -> None:
    """Prints one window's line to stderr as it ends."""
    idle = entry["idle"]
    print(
        f"{entry['operator']} ({entry['role']}): idle {idle['cpu_seconds']:.1f} CPU s "
        f"({idle['core_percent']:.2f} % of a core) over {idle['seconds']:.0f} s, "
        f"{idle.get(f'{PASSES} (idle)', 0):.0f} passes of {clusters} clusters, "
        f"{idle['requests']:.0f} requests",
        file=sys.stderr,
        flush=True,
    )


def rows(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """One window's reported figures, in table order."""
    idle = entry["idle"]
    warm = entry.get("warm_up") or {}
    methods = sorted(k for k in idle if k.endswith(" (idle)") and " " not in k[: -len(" (idle)")])
    out: list[tuple[str, Any]] = [
        ("warm-up (s)", warm.get("seconds")),
        ("warm-up CPU (s)", warm.get("cpu_seconds")),
        ("idle operator CPU (s)", idle["cpu_seconds"]),
        ("idle % of a core", idle["core_percent"]),
        ("idle ms per cluster per minute", idle["cpu_ms_per_cluster_per_minute"]),
        ("idle RayCluster passes", idle.get(f"{PASSES} (idle)")),
        ("idle CPU per pass (ms)", idle.get("cpu_ms_per_pass")),
        ("idle requests", idle["requests"]),
    ]
    out += [(f"idle {m[: -len(' (idle)')]}", idle[m]) for m in methods]
    out += [
        ("RSS at the end (MB)", idle["rss_mb"]),
        ("idle plane CPU (s)", idle["apiserver_cpu_seconds"]),
    ]
    return out


def table(entries: list[dict[str, Any]]) -> str:
    """Renders a Markdown table, one column per window in turn."""
    header = ["figure", *(f"{e['operator']} ({e['role']})" for e in entries)]
    labels: list[str] = []
    for e in entries:
        labels += [name for name, _ in rows(e) if name not in labels]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label in labels:
        cells = [label]
        for e in entries:
            value = dict(rows(e)).get(label)
            cells.append("-" if value is None else f"{value:,.2f}".rstrip("0").rstrip("."))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Parses the options, runs the windows and prints the table."""
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--namespaces", type=int, default=1,
        help="spread the fleet over this many namespaces (1: rayop bench's one)",
    )  # fmt: skip
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--qps", type=float, default=1000.0)
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--kuberay", type=Path, default=default_kuberay())
    parser.add_argument("--operators", default="rayop,kuberay,rayop")
    parser.add_argument(
        "--timeout", type=float, default=3600.0,
        help="seconds for the creation, and for each warm-up",
    )  # fmt: skip
    parser.add_argument("--idle-seconds", type=float, default=600.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--lock", type=Path, default=None, help="flock this file for the creation phase"
    )
    args = parser.parse_args()
    operators = [o for o in args.operators.split(",") if o]
    unknown = [o for o in operators if o not in OPERATORS]
    if unknown or not operators:
        parser.error(f"--operators: {args.operators!r}: each must be one of {OPERATORS}")
    if args.namespaces < 1 or args.clusters < 1:
        parser.error("--namespaces and --clusters must be at least 1")
    if "kuberay" in operators and not args.kuberay.is_file():
        parser.error(f"no KubeRay operator binary at {args.kuberay}")
    with tempfile.TemporaryDirectory(prefix="rayop-idle-takeover-") as tmp:
        entries = run(operators, args, Path(tmp) / "run")
    print(
        f"\n{args.clusters} RayClusters x {args.workers} workers in {args.namespaces} "
        f"namespace(s), embedded plane (TLS), "
        f"c={args.concurrency}, qps {args.qps:g} / burst {args.burst}, "
        f"idle windows of {args.idle_seconds:g} s\n"
    )
    print(table(entries))


if __name__ == "__main__":
    main()
