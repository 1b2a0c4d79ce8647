"""Benchmark: RayCluster readiness while N RayJobs run and are polled (issue 18 target 3; not a test).

On a fresh embedded control plane per run (``rayop apiserver`` in a child process, as
``rayop bench`` does, with its cluster network proxy on so that the operator reaches the
simulated dashboards *directly*, ``http://<head svc>.<ns>.svc.cluster.local:8265``, through
``HTTP_PROXY`` as KubeRay does without ``--use-kubernetes-proxy``), rayop's operator runs in
this process at KubeRay's defaults (``--reconcile-concurrency 1``, qps 100 / burst 200). Each
run:

1. creates N RayJobs (HTTPMode, entrypoint ``sleep 86400``, which the simulated dashboard keeps
   RUNNING; each RayJob's own cluster is a head and ``--job-workers`` workers, 0 by default) and
   waits until every one is ``jobDeploymentStatus: Running`` with ``jobStatus: RUNNING``;
2. measures a quiet window of ``--idle`` seconds: only the RayJobs are being polled (operator
   CPU, the operator's API requests, dashboard requests per second);
3. creates ``--clusters`` RayClusters of ``--workers`` workers at once and waits until all are
   ready: ready latency p50/p95 per cluster, time until all ready, the API requests the server
   served in that phase by verb and resource (the bench's own creates and watch included),
   dashboard requests per second and operator CPU (this process: operator + bench driver).

N = 0 is the baseline and always runs first in the same invocation; every other N runs once per
``--poll-intervals`` value (0: the Running pass GETs the job itself and is requeued every 3 s,
KubeRay v1.7.0's way; 3: rayop's background poller) and is reported as a ratio to N = 0.
``--profile OUT`` runs cProfile over a second quiet window (not measured) of the largest N's
runs, writes ``OUT.<N>.<interval>`` and prints the top entries (cProfile times are wall time).

Run (under the shared lock on a shared machine)::

    flock /tmp/rayop-heavy.lock .venv/bin/python benchmarks/rayjob_polling.py \\
        --rayjobs 100,1000 [--clusters 100] [--workers 10] [--poll-intervals 0,3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import logging
import os
import pstats
import socket
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rayop.advise.exposition import Snapshot
from rayop.bench.environment import (
    InProcessOperator,
    RequestCounts,
    ServerSettings,
    SubprocessControlPlane,
)
from rayop.bench.metrics import percentile
from rayop.bench.readiness import ReadinessTracker, Target
from rayop.bench.runner import install_crds
from rayop.bench.scenarios import ray_object, raycluster
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.transport import REQUESTS_SENT
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists
from rayop.kube.resources import NAMESPACES, RAY_CLUSTERS, RAY_JOBS

NAMESPACE = "poll"
SMALL = {
    "requests": {"cpu": "100m", "memory": "256Mi"},
    "limits": {"cpu": "100m", "memory": "256Mi"},
}


def free_port() -> int:
    """Returns a loopback TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ProxiedPlane(SubprocessControlPlane):
    """``rayop apiserver`` with its cluster network proxy on ``proxy_port``."""

    def __init__(self, settings: ServerSettings, proxy_port: int) -> None:
        super().__init__(settings)
        self.proxy_port = proxy_port

    def _command(self, kubeconfig: Path) -> list[str]:
        return [*super()._command(kubeconfig), "--http-proxy-port", str(self.proxy_port)]


def polling_rayjob(name: str, *, workers: int) -> dict[str, Any]:
    """Returns an HTTPMode RayJob whose Ray job runs for a day on a small cluster."""
    template = {
        "spec": {
            "containers": [{"name": "ray", "image": "rayproject/ray:2.46.0", "resources": SMALL}]
        }
    }
    cluster: dict[str, Any] = {
        "rayVersion": "2.46.0",
        "headGroupSpec": {"rayStartParams": {}, "template": template},
    }
    if workers:
        cluster["workerGroupSpecs"] = [
            {"groupName": "small", "replicas": workers, "minReplicas": 0, "maxReplicas": workers,
             "rayStartParams": {}, "template": template}
        ]  # fmt: skip
    spec = {"entrypoint": "sleep 86400", "submissionMode": "HTTPMode", "rayClusterSpec": cluster}
    return ray_object("RayJob", name, NAMESPACE, spec)


def job_running(obj: Mapping[str, Any], target: Target) -> bool:
    """Tells whether a RayJob's Ray job is RUNNING (its target's counts are not used)."""
    del target
    status = obj.get("status") or {}
    return status.get("jobDeploymentStatus") == "Running" and status.get("jobStatus") == "RUNNING"


@dataclass
class Window:
    """What the operator did during one timed window."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0
    operator_requests: dict[str, int] = field(default_factory=dict)
    """By HTTP method (the operator's rest_client_requests_total)."""
    server_requests: dict[str, int] = field(default_factory=dict)
    """``verb resource[/subresource]`` -> requests the API server served (every client)."""
    dashboard_requests: int = 0
    rayjob_reconciles: int = 0
    """Passes of the rayjob controller."""

    @property
    def dashboard_rps(self) -> float:
        """Dashboard requests per second."""
        return self.dashboard_requests / self.seconds if self.seconds else 0.0


@dataclass
class RunResult:
    """One run at one N."""

    rayjobs: int
    poll_interval: float = 3.0
    """rayop's --rayjob-dashboard-poll-interval of the run (0: KubeRay's GET in every pass)."""
    prepare_seconds: float = 0.0
    idle: Window = field(default_factory=Window)
    create: Window = field(default_factory=Window)
    ready_p50: float | None = None
    ready_p95: float | None = None
    all_ready: float | None = None
    clusters_ready: int = 0
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)


class Meter:
    """Reads the counters a window is the difference of."""

    def __init__(self, plane: ProxiedPlane, user: KubeClient, operator: InProcessOperator) -> None:
        self.plane, self.user, self.operator = plane, user, operator

    async def read(self) -> tuple[float, float, Snapshot, RequestCounts, int]:
        """Returns (monotonic time, CPU seconds, operator metrics, server counts, dashboard calls)."""
        counts = await self.plane.request_counts(self.user)
        return (
            time.monotonic(),
            time.process_time(),
            await self.operator.snapshot(),
            counts,
            sum(REQUESTS_SENT.values()),
        )

    @staticmethod
    def window(start: tuple[float, float, Snapshot, RequestCounts, int],
               end: tuple[float, float, Snapshot, RequestCounts, int]) -> Window:  # fmt: skip
        """Returns what happened between two readings."""
        t0, cpu0, snap0, counts0, dash0 = start
        t1, cpu1, snap1, counts1, dash1 = end
        ops: Counter[str] = Counter()
        for labels, value in snap1.select("rest_client_requests_total"):
            ops[labels.get("method", "")] += int(value)
        for labels, value in snap0.select("rest_client_requests_total"):
            ops[labels.get("method", "")] -= int(value)
        served: Counter[str] = Counter()
        for (verb, resource, sub, _code), n in (counts1 - counts0).items():
            served[f"{verb} {resource}{'/' + sub if sub else ''}"] += n
        return Window(
            seconds=round(t1 - t0, 3),
            cpu_seconds=round(cpu1 - cpu0, 3),
            operator_requests={k: v for k, v in sorted(ops.items()) if v},
            server_requests=dict(served.most_common()),
            dashboard_requests=dash1 - dash0,
            rayjob_reconciles=int(
                snap1.total("controller_runtime_reconcile_total", controller="rayjob")
                - snap0.total("controller_runtime_reconcile_total", controller="rayjob")
            ),
        )


async def create_rayjobs(
    user: KubeClient, count: int, workers: int, jobs: ReadinessTracker
) -> None:
    """Creates ``count`` RayJobs, 50 at a time, and registers their targets."""
    gate = asyncio.Semaphore(50)

    async def one(i: int) -> None:
        name = f"job-{i:04d}"
        async with gate:
            await user.create(RAY_JOBS, polling_rayjob(name, workers=workers), namespace=NAMESPACE)
        jobs.expect(name, workers=0)

    await asyncio.gather(*(one(i) for i in range(count)))


async def create_clusters(
    user: KubeClient, count: int, workers: int, tracker: ReadinessTracker
) -> None:
    """Creates every RayCluster at once (latency clocks start at each request)."""

    async def one(i: int) -> None:
        name = f"rc-{i:04d}"
        started = time.monotonic()
        created = await user.create(RAY_CLUSTERS, raycluster(name, workers, namespace=NAMESPACE),
                                    namespace=NAMESPACE)  # fmt: skip
        tracker.expect(name, workers=workers, started=started,
                       generation=int(created["metadata"].get("generation", 1)))  # fmt: skip

    await asyncio.gather(*(one(i) for i in range(count)))


def operator_settings(args: argparse.Namespace, poll_interval: float) -> OperatorSettings:
    """KubeRay's defaults, dashboards reached directly."""
    return OperatorSettings(
        reconcile_concurrency=args.concurrency,
        metrics_addr="0",
        health_probe_bind_address="0",
        enable_leader_election=False,
        qps=100.0,
        burst=200,
        options=OperatorOptions(),
        use_kubernetes_proxy=False,
        rayjob_dashboard_poll_interval=poll_interval,
    )


async def run_once(
    args: argparse.Namespace, n_jobs: int, poll_interval: float, *, profile: cProfile.Profile | None
) -> RunResult:
    """One fresh plane, one operator, N RayJobs then the RayClusters; blocks until done."""
    result = RunResult(rayjobs=n_jobs, poll_interval=poll_interval)
    port = free_port()
    os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = f"http://127.0.0.1:{port}"
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    plane = ProxiedPlane(ServerSettings(pod_start_delay=1.0), port)
    async with plane, KubeClient(plane.config, qps=-1, user_agent="rayop-bench") as user:
        await install_crds(user)
        with contextlib.suppress(AlreadyExists):
            await user.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        jobs = ReadinessTracker(user, NAMESPACE, resource=RAY_JOBS, check=job_running)
        tracker = ReadinessTracker(user, NAMESPACE)
        async with InProcessOperator(
            plane.config, operator_settings(args, poll_interval)
        ) as operator:
            meter = Meter(plane, user, operator)
            await jobs.start()
            t0 = time.monotonic()
            await create_rayjobs(user, n_jobs, args.job_workers, jobs)
            watchdog = asyncio.create_task(stall_dump(jobs), name="bench: stall dump")
            try:
                async with asyncio.timeout(args.timeout):
                    await jobs.wait_all()
            finally:
                watchdog.cancel()
            result.prepare_seconds = round(time.monotonic() - t0, 1)
            print(
                f"  N={n_jobs}: all RayJobs RUNNING after {result.prepare_seconds} s",
                file=sys.stderr,
            )
            await asyncio.sleep(args.settle)
            start = await meter.read()
            await asyncio.sleep(args.idle)
            result.idle = Meter.window(start, await meter.read())
            if profile is not None:  # its own window: the profiler's cost is not measured
                profile.enable()
                await asyncio.sleep(args.idle)
                profile.disable()
            await tracker.start()
            start = await meter.read()
            await create_clusters(user, args.clusters, args.workers, tracker)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(args.timeout):
                    await tracker.wait_all()
            result.create = Meter.window(start, await meter.read())
            latencies = [t.latency for t in tracker.met if t.latency is not None]
            result.clusters_ready = len(latencies)
            result.ready_p50 = _round(percentile(latencies, 0.5))
            result.ready_p95 = _round(percentile(latencies, 0.95))
            result.all_ready = _round(max(latencies)) if len(latencies) == args.clusters else None
            result.load_average = os.getloadavg()
            await tracker.stop()
            await jobs.stop()
    return result


def label(run: RunResult) -> str:
    """Names a run: its N and, for N > 0, how its jobs were polled."""
    if not run.rayjobs:
        return "N=0"
    how = f"poller {run.poll_interval:g} s" if run.poll_interval else "GET per pass"
    return f"N={run.rayjobs} {how}"


async def stall_dump(jobs: ReadinessTracker, *, after: float = 60.0) -> None:
    """Prints every task's stack once when no RayJob reached RUNNING for ``after`` seconds."""
    pending, since = jobs.pending, time.monotonic()
    while True:
        await asyncio.sleep(5)
        if jobs.pending != pending:
            pending, since = jobs.pending, time.monotonic()
        elif time.monotonic() - since > after:
            print(f"== no progress for {after:g} s, {pending} pending; tasks:", file=sys.stderr)
            for task in asyncio.all_tasks():
                task.print_stack(limit=12, file=sys.stderr)
            return


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def report(runs: list[RunResult], args: argparse.Namespace) -> str:
    """Returns the Markdown table: every N beside the N = 0 baseline."""
    head = ["metric", *(label(r) for r in runs), *(f"{label(r)} / N=0" for r in runs[1:])]
    rows: list[list[str]] = []

    def row(name: str, values: list[float | None]) -> None:
        cells = ["-" if v is None else f"{v:g}" for v in values]
        rows.append([name, *cells, *(_ratio(v, values[0]) for v in values[1:])])

    row("RayCluster ready p50 (s)", [r.ready_p50 for r in runs])
    row("RayCluster ready p95 (s)", [r.ready_p95 for r in runs])
    row("time until all ready (s)", [r.all_ready for r in runs])
    row("operator CPU while creating (s)", [r.create.cpu_seconds for r in runs])
    row(
        "operator requests while creating", [sum(r.create.operator_requests.values()) for r in runs]
    )
    row("dashboard requests/s while creating", [round(r.create.dashboard_rps, 1) for r in runs])
    row(f"quiet {args.idle:g} s: operator CPU (s)", [r.idle.cpu_seconds for r in runs])
    row(
        f"quiet {args.idle:g} s: operator requests",
        [sum(r.idle.operator_requests.values()) for r in runs],
    )
    row(
        f"quiet {args.idle:g} s: dashboard requests/s",
        [round(r.idle.dashboard_rps, 1) for r in runs],
    )
    row(f"quiet {args.idle:g} s: RayJob passes", [r.idle.rayjob_reconciles for r in runs])
    row("RayJob passes while creating", [r.create.rayjob_reconciles for r in runs])
    row("RayJobs: create until all RUNNING (s)", [r.prepare_seconds for r in runs])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    for r in runs:
        lines.append(f"\nN={r.rayjobs}: load average {r.load_average[0]:.2f}; requests while creating "
                     f"(server, all clients): {r.create.server_requests}; operator by method: "
                     f"{r.create.operator_requests}; quiet window operator: {r.idle.operator_requests}")  # fmt: skip
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[RunResult]:
    """Runs N = 0, then each N in each mode (the largest N's runs profiled when asked)."""
    plan = [(0, args.poll_intervals[-1])]
    plan += [(n, interval) for n in args.rayjobs if n for interval in args.poll_intervals]
    runs = []
    for n, interval in plan:
        profiled = args.profile and n and n == max(args.rayjobs)
        profile = cProfile.Profile() if profiled else None
        runs.append(await run_once(args, n, interval, profile=profile))
        if profile is not None:
            profile.dump_stats(f"{args.profile}.{n}.{interval:g}")
            print(f"== profile of the quiet window, {label(runs[-1])} ==", file=sys.stderr)
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
            print(out.getvalue(), file=sys.stderr)
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
            print(out.getvalue(), file=sys.stderr)
    return runs


def main() -> None:
    """Parses the flags, runs, prints the table (and writes JSON when asked)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rayjobs", type=lambda s: [int(x) for x in s.split(",")], default=[100])
    parser.add_argument("--job-workers", type=int, default=0)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument(
        "--poll-intervals",
        type=lambda s: [float(x) for x in s.split(",")],
        default=[0.0, 3.0],
        help="rayop's --rayjob-dashboard-poll-interval values to run each N with (0: a GET "
        "in every Running pass, KubeRay's way); N=0 runs with the last",
    )
    parser.add_argument("--idle", type=float, default=15.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--profile", type=str, default=None)
    parser.add_argument("--json", type=str, default=None)
    parser.add_argument("--log", type=str, default=None, help="write WARNING+ logs here")
    args = parser.parse_args()
    if args.log:
        logging.basicConfig(filename=args.log, level=logging.WARNING)
    runs = asyncio.run(main_async(args))
    print(report(runs, args))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in runs], indent=2))


if __name__ == "__main__":
    main()
