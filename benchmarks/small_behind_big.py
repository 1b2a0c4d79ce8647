"""Benchmark: small RayClusters beside a big one and slow dashboards, KubeRay v1.7.0 and rayop (not a test).

Issue 33 part 2. For each operator, one after the other in one invocation, on a FRESH embedded
plane each (``rayop apiserver`` in a child process, TLS, pods Running and Ready ``--pod-start``
s after creation, its cluster network proxy on, so that both operators reach the simulated
dashboards directly through ``HTTP_PROXY``, as KubeRay does without ``--use-kubernetes-proxy``),
the operator runs as a child process at its defaults (``--reconcile-concurrency 1``, qps 100 /
burst 200; the same flags for both), and the bench:

1. creates RayCluster ``big`` with 0 workers and waits until it is ready;
2. at t = 0, all at once: scales ``big`` to ``--big-workers`` (1,000); creates ``--jobs`` (200)
   HTTPMode RayJobs (entrypoint ``sleep --job-seconds``, each on its own head-only cluster), one in
   ``--faulty-every`` (5) of them with a faulty dashboard, alternately slow (every answer held back
   ``--slow-delay`` s, within the operators' 2 s dashboard timeout) and hanging (never answers in
   time): the head's ``sim.rayop/dashboard-delay`` annotation
   (:mod:`rayop.sim.dashboard.registry`); and creates ``--small`` (100) small RayClusters
   (``--small-workers`` workers each) evenly over ``--small-window`` s;
3. waits until every small cluster and ``big`` is ready and every RayJob whose dashboard answers
   has ``jobStatus: SUCCEEDED`` (``--timeout`` at most).

Reported per operator, and as the ratio rayop/KubeRay:

- the small clusters' ready latency p50/p95/max (creation to ``status.state: ready`` with every
  worker ready), and ``big``'s (scale request to ready);
- the jobs' status lag: from the job's end on the Ray side (its ``end_time``, read from the head's
  dashboard afterwards, in ms) to the first watch event with ``jobStatus: SUCCEEDED``, p50/p95/max,
  for the jobs with a healthy dashboard and for the slow ones; the hanging ones never finish
  (their submission never gets an answer);
- pod creates the API server answered 201, and duplicates (creates beyond the pods the scenario
  needs: one per head and worker);
- the operator's CPU seconds (user + system) from t = 0 until the end of step 3.

Run (KubeRay's binary from ``scripts/controlplane-build kuberay``, or ``--kuberay PATH``)::

    PYTHONPATH=src .venv/bin/python benchmarks/small_behind_big.py \\
        [--big-workers 1000] [--jobs 200] [--small 100] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from rayjob_polling import ProxiedPlane, free_port  # benchmarks/, beside this script
from side_by_side import default_kuberay  # benchmarks/, beside this script

from rayop.bench.environment import ServerSettings
from rayop.bench.launched_operator import LaunchedOperator, OperatorCommand
from rayop.bench.metrics import percentile
from rayop.bench.readiness import ReadinessTracker, Target
from rayop.bench.runner import install_crds
from rayop.bench.scenarios import ray_object, raycluster
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists
from rayop.kube.resources import NAMESPACES, RAY_CLUSTERS, RAY_JOBS
from rayop.sim.dashboard.registry import DELAY_ANNOTATION

NAMESPACE = "smallbig"
OPERATORS = ("kuberay", "rayop")
FLAGS = (
    "--reconcile-concurrency={concurrency} --metrics-addr=127.0.0.1:{metrics_port} "
    "--health-probe-bind-address=0 --enable-leader-election=false --qps={qps} --burst={burst}"
)
HANG_DELAY = 3600.0
"""A hanging dashboard's delay: far beyond any client's timeout."""
SMALL = {"limits": {"cpu": "100m", "memory": "256Mi"}}


def command(operator: str, kuberay: Path, rayop_flags: str = "") -> OperatorCommand:
    """The operator's command template (the same flags for both; ``rayop_flags`` are rayop's
    own, appended)."""
    if operator == "kuberay":
        return OperatorCommand.parse(f"{kuberay} --kubeconfig={{kubeconfig}} {FLAGS}")
    rayop = f"{sys.executable} -m rayop run --kubeconfig={{kubeconfig}} {FLAGS} {rayop_flags}"
    return OperatorCommand.parse(rayop.strip())


def dashboard_kind(index: int, every: int) -> str:
    """Which dashboard job ``index`` gets: "healthy", or alternately "slow" and "hanging" for
    one in ``every``."""
    if every <= 0 or index % every != every - 1:
        return "healthy"
    return "slow" if (index // every) % 2 == 0 else "hanging"


def rayjob(name: str, seconds: float, delay: float | None) -> dict[str, Any]:
    """An HTTPMode RayJob whose Ray job sleeps ``seconds`` on a head-only cluster; ``delay``
    annotates its head (a slow or hanging dashboard)."""
    metadata: dict[str, Any] = {}
    if delay is not None:
        metadata["annotations"] = {DELAY_ANNOTATION: f"{delay:g}"}
    container = {"name": "ray-head", "image": "rayproject/ray:2.46.0", "resources": SMALL}
    template = {"metadata": metadata, "spec": {"containers": [container]}}
    spec = {
        "entrypoint": f"sleep {seconds:g}",
        "submissionMode": "HTTPMode",
        "rayClusterSpec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template},
        },
    }
    return ray_object("RayJob", name, NAMESPACE, spec)


def job_succeeded(obj: Mapping[str, Any], target: Target) -> bool:
    """Whether a RayJob's status says its Ray job SUCCEEDED."""
    del target
    return (obj.get("status") or {}).get("jobStatus") == "SUCCEEDED"


def stats(values: list[float]) -> dict[str, float | int | None]:
    """p50/p95/max (s, 2 decimals) and how many values."""

    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 2)

    return {
        "n": len(values),
        "p50": r(percentile(values, 0.5)),
        "p95": r(percentile(values, 0.95)),
        "max": r(max(values) if values else None),
    }


@dataclass
class RunResult:
    """One operator's run."""

    operator: str
    small_ready: dict[str, Any] = field(default_factory=dict)
    small_not_ready: int = 0
    big_ready_seconds: float | None = None
    job_lag_healthy: dict[str, Any] = field(default_factory=dict)
    job_lag_slow: dict[str, Any] = field(default_factory=dict)
    jobs_succeeded: dict[str, int] = field(default_factory=dict)
    jobs_expected: dict[str, int] = field(default_factory=dict)
    pod_creates: int = 0
    expected_pod_creates: int = 0
    duplicate_pod_creates: int = 0
    operator_cpu_seconds: float = 0.0
    clusters_seconds: float | None = None
    """From t = 0 until every cluster (the small ones and ``big``) is ready."""
    operator_cpu_clusters: float | None = None
    """The operator's CPU seconds over :attr:`clusters_seconds`."""
    apiserver_cpu_clusters: float | None = None
    """The API server child's CPU seconds over :attr:`clusters_seconds` (it shares the cores)."""
    server_requests: dict[str, int] = field(default_factory=dict)
    """``verb resource`` -> requests the API server served from t = 0 to the end (all clients:
    the bench's creates and watches included)."""
    operator_requests: dict[str, int] = field(default_factory=dict)
    """By HTTP method: the operator's ``rest_client_requests_total`` over the same phase."""
    seconds: float = 0.0
    timed_out: bool = False
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)


def cpu_since(process: psutil.Process, start: Any) -> float:
    """CPU seconds (user + system) ``process`` used since its ``cpu_times()`` were ``start``."""
    now = process.cpu_times()
    return round(float((now.user - start.user) + (now.system - start.system)), 2)


def pod_creates(counts: Mapping[tuple[str, str, str, str], int]) -> int:
    """Pod creates the server answered 201."""
    return sum(n for (verb, res, sub, code), n in counts.items()
               if verb == "create" and res == "pods" and not sub and code == "201")  # fmt: skip


async def ray_end_times(user: KubeClient, proxy: str, names: list[str]) -> dict[str, float]:
    """Reads each named RayJob's Ray job ``end_time`` (epoch seconds) from its head's dashboard,
    through the plane's proxy; a job whose dashboard does not answer is left out (the table's
    "with a measured lag" row counts the rest)."""
    jobs = {
        j["metadata"]["name"]: j for j in (await user.list(RAY_JOBS, namespace=NAMESPACE))["items"]
    }
    out: dict[str, float] = {}
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def one(name: str) -> None:
            status = jobs[name].get("status") or {}
            url = f"http://{status['dashboardURL']}/api/jobs/{status['jobId']}"
            try:
                async with session.get(url, proxy=proxy) as resp:
                    body = await resp.json(content_type=None)
            except (aiohttp.ClientError, TimeoutError) as err:  # counted as not measured
                print(f"{name}: no end_time from {url}: {err!r}", file=sys.stderr)
                return
            if body.get("end_time"):
                out[name] = float(body["end_time"]) / 1000.0

        await asyncio.gather(*(one(n) for n in names if n in jobs))
    return out


async def run_one(operator: str, args: argparse.Namespace) -> RunResult:
    """One fresh plane, one operator, the scenario; blocks until done."""
    result = RunResult(operator=operator)
    port = free_port()
    proxy = f"http://127.0.0.1:{port}"
    os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = proxy
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    plane = ProxiedPlane(ServerSettings(pod_start_delay=args.pod_start, tls=True), port)
    async with plane, KubeClient(plane.config, qps=-1, user_agent="rayop-bench") as user:
        await install_crds(user)
        with contextlib.suppress(AlreadyExists):
            await user.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        launched = LaunchedOperator(
            command(operator, args.kuberay, args.rayop_flags), plane.kubeconfig_file,
            concurrency=1, qps=args.qps, burst=args.burst,
        )  # fmt: skip
        clusters = ReadinessTracker(user, NAMESPACE)
        jobs = ReadinessTracker(user, NAMESPACE, resource=RAY_JOBS, check=job_succeeded,
                                clock=time.time)  # fmt: skip
        async with launched:
            await clusters.start()
            await jobs.start()
            await user.create(RAY_CLUSTERS, raycluster("big", 0, namespace=NAMESPACE),
                              namespace=NAMESPACE)  # fmt: skip
            clusters.expect("big", workers=0)
            async with asyncio.timeout(120):
                await clusters.wait_ready("big")
            assert launched.pid is not None
            assert plane.pid is not None
            process, server = psutil.Process(launched.pid), psutil.Process(plane.pid)
            cpu0, server0 = process.cpu_times(), server.cpu_times()
            counts0, ops0 = await plane.request_counts(user), await launched.snapshot()
            t0 = time.monotonic()
            kinds = {f"job-{i:04d}": dashboard_kind(i, args.faulty_every) for i in range(args.jobs)}
            result.expected_pod_creates = 1 + args.big_workers + args.jobs
            result.expected_pod_creates += args.small * (1 + args.small_workers)

            async def scale_big() -> None:
                patch = {"spec": {"workerGroupSpecs": [{**raycluster("big", args.big_workers,
                         namespace=NAMESPACE)["spec"]["workerGroupSpecs"][0]}]}}  # fmt: skip
                started = time.monotonic()
                done = await user.patch(RAY_CLUSTERS, "big", patch, namespace=NAMESPACE)
                clusters.expect("big", workers=args.big_workers, started=started,
                                generation=int(done["metadata"]["generation"]))  # fmt: skip

            async def create_jobs() -> None:
                gate = asyncio.Semaphore(20)
                delays = {"healthy": None, "slow": args.slow_delay, "hanging": HANG_DELAY}

                async def one(name: str) -> None:
                    async with gate:
                        body = rayjob(name, args.job_seconds, delays[kinds[name]])
                        await user.create(RAY_JOBS, body, namespace=NAMESPACE)
                    if kinds[name] != "hanging":
                        jobs.expect(name, workers=0)

                await asyncio.gather(*(one(n) for n in kinds))

            async def create_small() -> None:
                interval = args.small_window / max(1, args.small)

                async def one(i: int) -> None:
                    name = f"small-{i:04d}"
                    started = time.monotonic()
                    created = await user.create(
                        RAY_CLUSTERS,
                        raycluster(name, args.small_workers, namespace=NAMESPACE),
                        namespace=NAMESPACE,
                    )
                    clusters.expect(name, workers=args.small_workers, started=started,
                                    generation=int(created["metadata"].get("generation", 1)))  # fmt: skip

                pending = []
                for i in range(args.small):
                    pending.append(asyncio.create_task(one(i)))
                    await asyncio.sleep(interval)
                await asyncio.gather(*pending)

            await asyncio.gather(scale_big(), create_jobs(), create_small())
            try:
                async with asyncio.timeout(args.timeout):
                    await clusters.wait_all()
                    result.clusters_seconds = round(time.monotonic() - t0, 2)
                    result.operator_cpu_clusters = cpu_since(process, cpu0)
                    result.apiserver_cpu_clusters = cpu_since(server, server0)
                    await jobs.wait_all()
            except TimeoutError:
                result.timed_out = True
            result.seconds = round(time.monotonic() - t0, 2)
            result.operator_cpu_seconds = cpu_since(process, cpu0)
            result.load_average = os.getloadavg()
            await asyncio.sleep(1.0)  # late duplicate creates (if any) reach the server
            counts1, ops1 = await plane.request_counts(user), await launched.snapshot()
            result.pod_creates = pod_creates(counts1)
            served: Counter[str] = Counter()
            for (verb, resource, sub, _code), n in (counts1 - counts0).items():
                served[f"{verb} {resource}{'/' + sub if sub else ''}"] += n
            result.server_requests = dict(served.most_common())
            by_method: Counter[str] = Counter()
            for snap, sign in ((ops1, 1), (ops0, -1)):
                for labels, value in snap.select("rest_client_requests_total"):
                    by_method[labels.get("method", "")] += sign * int(value)
            result.operator_requests = {k: v for k, v in sorted(by_method.items()) if v}
            result.duplicate_pod_creates = max(0, result.pod_creates - result.expected_pod_creates)
            small = [t for t in clusters.targets.values() if t.name.startswith("small-")]
            result.small_ready = stats([t.latency for t in small if t.latency is not None])
            result.small_not_ready = sum(1 for t in small if t.latency is None)
            result.big_ready_seconds = clusters.targets["big"].latency
            met = {t.name: t for t in jobs.met}
            ends = await ray_end_times(user, proxy, sorted(met))
            for kind in ("healthy", "slow", "hanging"):
                result.jobs_expected[kind] = sum(1 for k in kinds.values() if k == kind)
                result.jobs_succeeded[kind] = sum(1 for n in met if kinds[n] == kind)
            for kind, slot in (("healthy", "job_lag_healthy"), ("slow", "job_lag_slow")):
                lags = [met[n].ready_at - ends[n] for n in met  # type: ignore[operator]
                        if kinds[n] == kind and n in ends]  # fmt: skip
                setattr(result, slot, stats(lags))
            await jobs.stop()
            await clusters.stop()
    return result


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _ratio(a: Any, b: Any) -> str:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or not b:
        return "-"
    return f"{a / b:.2f}"


def rows(r: RunResult) -> list[tuple[str, Any]]:
    """The reported figures of one run, in table order."""
    out: list[tuple[str, Any]] = [
        (f"small clusters ready p50 (s), n={r.small_ready.get('n')}", r.small_ready.get("p50")),
        ("small clusters ready p95 (s)", r.small_ready.get("p95")),
        ("small clusters ready max (s)", r.small_ready.get("max")),
        ("small clusters not ready", r.small_not_ready),
        ("big cluster: scale to ready (s)", r.big_ready_seconds),
    ]
    for kind, lag in (("healthy", r.job_lag_healthy), ("slow", r.job_lag_slow)):
        out += [(f"job status lag, {kind} dashboard, {q} (s)", lag.get(q))
                for q in ("p50", "p95", "max")]  # fmt: skip
        out.append((f"jobs with a measured lag, {kind} dashboard", lag.get("n")))
    for kind, n in r.jobs_expected.items():
        out.append((f"jobs SUCCEEDED, {kind} dashboard (of {n})", r.jobs_succeeded.get(kind, 0)))
    out += [
        (f"pod creates (expected {r.expected_pod_creates})", r.pod_creates),
        ("duplicate pod creates", r.duplicate_pod_creates),
        ("operator requests", sum(r.operator_requests.values())),
        *((f"operator {m}", n) for m, n in r.operator_requests.items()),
        ("until every cluster is ready (s)", r.clusters_seconds),
        ("  operator CPU in that time (s)", r.operator_cpu_clusters),
        ("  API server CPU in that time (s)", r.apiserver_cpu_clusters),
        ("operator CPU, whole scenario (s)", r.operator_cpu_seconds),
        ("scenario seconds", r.seconds),
        ("timed out", r.timed_out),
        ("load average (1 min) at the end", r.load_average[0]),
    ]
    return out


def table(runs: list[RunResult]) -> str:
    """Markdown: one column per operator, and rayop/KubeRay."""
    by = {r.operator: dict(rows(r)) for r in runs}
    labels: list[str] = []
    for r in runs:
        labels += [name for name, _ in rows(r) if name not in labels]
    head = ["metric", *by, *(["rayop / KubeRay"] if {"rayop", "kuberay"} <= set(by) else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label in labels:
        cells = [label, *(_cell(by[o].get(label)) for o in by)]
        if len(head) > len(by) + 1:
            cells.append(_ratio(by["rayop"].get(label), by["kuberay"].get(label)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[RunResult]:
    """Runs each operator in turn."""
    runs = []
    for operator in args.operators.split(","):
        started = time.monotonic()
        runs.append(await run_one(operator, args))
        print(f"{operator}: run took {time.monotonic() - started:.0f} s", file=sys.stderr)
    return runs


def main() -> None:
    """Parses the flags, runs, prints the table (and writes JSON when asked)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--big-workers", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--small-workers", type=int, default=1)
    parser.add_argument("--small-window", type=float, default=10.0)
    parser.add_argument("--job-seconds", type=float, default=20.0)
    parser.add_argument("--faulty-every", type=int, default=5)
    parser.add_argument("--slow-delay", type=float, default=1.5)
    parser.add_argument("--pod-start", type=float, default=1.0)
    parser.add_argument("--qps", type=float, default=100.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--operators", default=",".join(OPERATORS))
    parser.add_argument("--kuberay", type=Path, default=default_kuberay())
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--rayop-flags", default="", help="more flags for rayop run only")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if "kuberay" in args.operators and not args.kuberay.is_file():
        parser.error(f"no KubeRay operator binary at {args.kuberay}")
    runs = asyncio.run(main_async(args))
    print(f"\nbig 0 -> {args.big_workers} workers, {args.jobs} RayJobs (1 in {args.faulty_every} "
          f"dashboards slow {args.slow_delay:g} s or hanging), {args.small} small RayClusters "
          f"x {args.small_workers} workers over {args.small_window:g} s\n")  # fmt: skip
    print(table(runs))
    for r in runs:
        print(f"\n{r.operator}: requests served (all clients) {r.server_requests}")
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=2))


if __name__ == "__main__":
    main()
