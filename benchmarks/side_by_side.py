"""Benchmark: KubeRay v1.7.0 beside rayop on a real kube-apiserver with kwok nodes (not a test).

For each ``--reconcile-concurrency`` value and each operator, one after the other on this
machine, it starts a FRESH real control plane (``rayop dev real-cluster``'s etcd,
kube-apiserver, controller-manager, scheduler and kwok; a few seconds), installs the ray.io
CRDs, starts the operator as a child process with the same flags (``--reconcile-concurrency N
--metrics-addr :PORT --enable-leader-election=false``, admin kubeconfig in ``KUBECONFIG``),
waits until its log says its RayCluster controller started its workers (so no cluster reaches
it in the caches' first list, which both operators' priority queues file at low priority), and
runs::

    rayop bench --kubeconfig K --external-operator --external-metrics-url URL \
        --external-operator-pid PID --concurrency N --clusters 100 --workers 10 --json ...

which creates the RayClusters (simple CPU-only clusters: a head and one group of W workers) and
waits until every one is ready. Then the operator and the control plane are stopped, so no run
sees another's objects. Reported per run and as ratios rayop/KubeRay:

- seconds until all clusters are ready, and per-cluster ready latency p50/p95;
- API requests by verb that the apiserver served during the measured phase
  (``apiserver_request_total`` deltas; ALL clients: kwok, the controller-manager, the scheduler
  and the bench's own creates and watches are included, and are the same for both operators);
- the operator's own requests by HTTP method (its ``rest_client_requests_total`` deltas);
- operator CPU seconds (user + system) and peak RSS, read with psutil on the operator process;
- the stored Events about ray.io objects by reason: Event objects and the occurrences they
  stand for (series counts), 3 s after the last cluster is ready.

KubeRay's binary is built from the source snapshot in shared/compat by
``scripts/controlplane-build kuberay`` (``--kuberay`` / ``$RAYOP_KUBERAY_BINARY`` name another).
CI runs it at 20 x 5, one concurrency (``tests/real/test_side_by_side_small.py``: same work on
both sides, figures printed, not asserted); the full size is run by hand. On 2 shared cores the
whole control plane competes with the operator for CPU; compare ratios from
one invocation, not absolute figures across machines. Run::

    .venv/bin/python benchmarks/side_by_side.py [--clusters 100] [--workers 10] \
        [--concurrency 1,4] [--kuberay PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil
from process_sampler import CpuSampler, busy_summary  # benchmarks/, beside this script
from request_breakdown import (  # benchmarks/, beside this script
    breakdown_table,
    measured_end,
    operator_breakdown,
    operator_of,
    read_audit,
    timeline_table,
)

from rayop.advise.exposition import Snapshot
from rayop.bench.child_lifetime import end_with_parent
from rayop.bench.runner import install_crds
from rayop.cli.realcluster import RealCluster, RealClusterSettings, free_port
from rayop.cli.realcluster_config import AUDIT_LOG
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import EVENTS, NAMESPACES

REPO = Path(__file__).resolve().parents[1]
VERBS = ("create", "get", "list", "watch", "update", "patch", "delete")
OPERATORS = ("kuberay", "rayop")


@dataclass(frozen=True)
class Run:
    """One measured run: which operator, at which concurrency, and the bench's result."""

    operator: str
    concurrency: int
    result: dict[str, Any]


def default_kuberay() -> Path:
    """Returns ``$RAYOP_KUBERAY_BINARY`` or the first cached KubeRay operator binary."""
    explicit = os.environ.get("RAYOP_KUBERAY_BINARY")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("RAYOP_CACHE_DIR") or Path.home() / ".cache" / "rayop")
    for sub in ("kuberay", "kuberay-local"):
        candidate = cache / sub / "v1.7.0" / "ray-operator"
        if candidate.is_file():
            return candidate
    return cache / "kuberay" / "v1.7.0" / "ray-operator"


def operator_command(
    operator: str,
    kuberay: Path,
    kubeconfig: Path,
    concurrency: int,
    port: int,
    profile: Path | None = None,
    rate: tuple[float, int] | None = None,
) -> list[str]:
    """Returns the operator's command line (the same flags for both); rayop's runs under
    cProfile, writing ``profile`` when it exits, if one is named. ``rate`` is ``(qps, burst)``
    for both (None: each operator's default)."""
    flags = [
        f"--reconcile-concurrency={concurrency}",
        f"--metrics-addr=:{port}",
        "--health-probe-bind-address=0",
        "--enable-leader-election=false",
        *([] if rate is None else [f"--qps={rate[0]:g}", f"--burst={rate[1]}"]),
    ]
    if operator == "kuberay":
        return [str(kuberay), *flags]
    run = ["run", f"--kubeconfig={kubeconfig}", *flags]
    if profile is not None:
        return [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "rayop", *run]
    return [sys.executable, "-m", "rayop", *run]


def wait_for(
    ready: Callable[[], bool], proc: subprocess.Popen[bytes], timeout: float, what: str
) -> None:
    """Polls ``ready`` every 0.3 s until it holds; raises if the operator exits first or
    ``timeout`` passes (naming ``what``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the operator exited with code {proc.returncode}")
        if ready():
            return
        time.sleep(0.3)
    raise TimeoutError(f"{what} in {timeout} s")


def metrics_up(url: str) -> bool:
    """Whether the operator's /metrics reports its RayCluster controller."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return b"controller_runtime_max_concurrent_reconciles" in resp.read()
    except OSError:
        return False


def wait_for_metrics(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Blocks until the operator's /metrics reports its RayCluster controller."""
    wait_for(lambda: metrics_up(url), proc, timeout, f"{url} did not come up")


def controller_started(log: Path, controller: str = "raycluster") -> bool:
    """Whether the operator's log holds controller-runtime's ``Starting workers`` line for its
    RayCluster controller (KubeRay logs it, and rayop after it, once the caches synced)."""
    if not log.exists():
        return False
    with log.open("rb") as lines:
        return any(
            b"Starting workers" in line and controller.encode() in line.lower() for line in lines
        )


def wait_until_started(log: Path, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Blocks until the operator's RayCluster controller runs its workers (its log says so).

    Clusters the bench creates before the cache synced reach the operator in the cache's first
    list, which the priority queue of both operators (controller-runtime's, and rayop's after
    it) files at low priority, so every later pod event of a cluster would overtake the backlog:
    a start neither operator would see in use. /metrics alone is not enough (KubeRay serves it
    seconds before its caches sync), nor is the audit log (client-go's informers list with a
    streaming watch, logged only when it ends).
    """
    what = "the operator's RayCluster controller did not start"
    wait_for(lambda: controller_started(log), proc, timeout, what)


async def install_ray_crds(kubeconfig: str) -> None:
    """Installs the ray.io CRDs before the operator starts, as a chart does (the bench keeps
    them)."""
    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config, qps=-1, user_agent="rayop-side-by-side") as client:
        await install_crds(client)


EVENT_SETTLE_SECONDS = 3.0
"""How long the operator gets to write its last events before they are counted."""

RAY_KINDS = ("RayCluster", "RayJob", "RayService")


async def events_by_reason(kubeconfig: str) -> dict[str, list[int]]:
    """Counts the stored Events about ray.io objects: reason -> [Event objects, occurrences].

    An occurrence is one recorded event: an Event's ``series.count`` (events.k8s.io), or its
    ``count`` (core/v1), or 1.
    """
    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config, qps=-1, user_agent="rayop-side-by-side") as client:
        events = (await client.list(EVENTS))["items"]
    out: dict[str, list[int]] = {}
    for event in events:
        if (event.get("regarding") or {}).get("kind") not in RAY_KINDS:
            continue
        counts = out.setdefault(str(event.get("reason")), [0, 0])
        counts[0] += 1
        counts[1] += int((event.get("series") or {}).get("count") or event.get("count") or 1)
    return dict(sorted(out.items()))


def settled_events_by_reason(kubeconfig: str, limit: float = 30.0) -> dict[str, list[int]]:
    """Counts the events once they stop changing: both recorders write asynchronously, and a
    series' second occurrence is a PATCH that can lag on a loaded machine. Waits at least
    :data:`EVENT_SETTLE_SECONDS`, then until two reads 2 s apart agree (``limit`` s at most)."""
    time.sleep(EVENT_SETTLE_SECONDS)
    deadline = time.monotonic() + limit
    counts = asyncio.run(events_by_reason(kubeconfig))
    while time.monotonic() < deadline:
        time.sleep(2.0)
        again = asyncio.run(events_by_reason(kubeconfig))
        if again == counts:
            break
        counts = again
    return counts


def operator_requests(url: str) -> dict[str, float]:
    """Returns the operator's ``rest_client_requests_total`` by HTTP method, and its
    reconciles by controller (``controller_runtime_reconcile_total``, as ``reconcile <name>``)."""
    with urllib.request.urlopen(url, timeout=120) as resp:
        snapshot = Snapshot.from_text(resp.read().decode())
    out = snapshot.by_label("rest_client_requests_total", "method")
    reconciles = snapshot.by_label("controller_runtime_reconcile_total", "controller")
    out.update({f"reconcile {name}": n for name, n in reconciles.items()})
    return out


WATCH_COUNTERS = {
    "terminated": "apiserver_terminated_watchers_total",
    "cache_initializations": "apiserver_watch_cache_initializations_total",
}
"""kube-apiserver's counters of what ends watches: a watcher its watch cache closed because it
fell behind (its buffer full when the dispatch budget ran out: ``cacher/cache_watcher.go``),
and the watch cache re-listing etcd (which ends every watcher of that resource)."""


async def apiserver_watch_counters(kubeconfig: str) -> dict[str, dict[str, float]]:
    """Reads :data:`WATCH_COUNTERS` from the API server's ``/metrics``, by resource."""
    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config, qps=-1, user_agent="rayop-side-by-side") as client:
        status, body = await client.request("GET", "/metrics")
    if status != 200:
        raise RuntimeError(f"GET /metrics answered {status}")
    snapshot = Snapshot.from_text(body.decode())
    return {name: snapshot.by_label(metric, "resource") for name, metric in WATCH_COUNTERS.items()}


def idle_phase(
    proc: subprocess.Popen[bytes], url: str, seconds: float, clusters: int
) -> dict[str, float]:
    """Samples the converged operator for ``seconds``: its CPU (user + system, psutil) and
    requests over the window, as % of one core and per idle cluster, and its RSS at the end."""
    process = psutil.Process(proc.pid)
    requests0, cpu0 = operator_requests(url), process.cpu_times()
    started = time.monotonic()
    time.sleep(seconds)
    cpu1, elapsed = process.cpu_times(), time.monotonic() - started
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    after = operator_requests(url)
    delta = {k: v - requests0.get(k, 0.0) for k, v in after.items()}
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "core_percent": 100.0 * cpu / elapsed,
        "core_percent_per_1000_clusters": 100.0 * cpu / elapsed * 1000 / clusters,
        "cpu_ms_per_cluster_per_minute": 1000.0 * cpu / clusters / (elapsed / 60),
        "requests": sum(v for k, v in delta.items() if " " not in k),
        **{f"{k} (idle)": v for k, v in delta.items()},
        "rss_mb": process.memory_info().rss / 1e6,
    }


async def _bench_namespaces(kubeconfig: str) -> list[str]:
    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config, qps=-1, user_agent="rayop-side-by-side") as client:
        items = (await client.list(NAMESPACES))["items"]
    return [n["metadata"]["name"] for n in items if n["metadata"]["name"].startswith("rayop-bench")]


def teardown_phase(
    proc: subprocess.Popen[bytes], kubeconfig: str, audit: Path, seconds: float
) -> dict[str, Any]:
    """Measures the namespace teardown the bench started as it exited (it deleted its
    namespace): waits until the namespace is gone (``seconds`` at most), then counts the
    operator's requests from the bench's namespace delete on, by ``verb resource code``, and
    the operator's CPU over the wait."""
    process = psutil.Process(proc.pid)
    cpu0 = process.cpu_times()
    started = time.monotonic()
    left = asyncio.run(_bench_namespaces(kubeconfig))
    while left and time.monotonic() - started < seconds:
        time.sleep(1.0)
        left = asyncio.run(_bench_namespaces(kubeconfig))
    gone_after = time.monotonic() - started
    time.sleep(3.0)  # the last requests reach the audit log
    cpu1 = process.cpu_times()
    requests = read_audit(audit)
    end = measured_end(requests)
    mine = [r for r in requests if end is not None and r.at >= end and operator_of(r)]
    counts: dict[str, int] = {}
    for r in mine:
        key = f"{r.verb} {r.resource} {r.code}"
        counts[key] = counts.get(key, 0) + 1
    return {
        "namespace_gone": not left,
        "seconds_until_gone": gone_after,
        "cpu_seconds": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
        "requests": len(mine),
        "refused": sum(1 for r in mine if r.code == 403),
        "by_verb_resource_code": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
    }


def heavy_lock(path: Path | None) -> IO[bytes] | None:
    """Takes the shared heavy-run lock (``flock``) for a run's creation phase; None: no lock."""
    if path is None:
        return None
    handle = path.open("ab")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def run_bench(
    proc: subprocess.Popen[bytes],
    url: str,
    kubeconfig: Path,
    concurrency: int,
    args: argparse.Namespace,
    out: Path,
    sampler: CpuSampler,
    keep_objects: bool = True,
) -> dict[str, Any]:
    """Runs ``rayop bench --external-operator`` against the started operator (``args``: its
    clusters, workers and timeout) while ``sampler`` samples once a second; returns the
    bench's result. Raises if the bench fails or the operator exited meanwhile."""
    bench = [
        sys.executable, "-m", "rayop", "bench",
        "--kubeconfig", str(kubeconfig),
        "--external-operator", "--external-metrics-url", url,
        "--external-operator-pid", str(proc.pid),
        "--concurrency", str(concurrency),
        "--clusters", str(args.clusters), "--workers", str(args.workers),
        "--timeout", str(args.timeout), "--json", str(out),
        *(["--keep-objects"] if keep_objects else []),
    ]  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    with subprocess.Popen(
        bench, env=env, stdout=subprocess.DEVNULL, preexec_fn=end_with_parent()
    ) as child:
        try:
            code = sampler.sample_until_exit(child)
        finally:
            child.kill()  # a no-op once it has exited
    if code != 0:
        raise subprocess.CalledProcessError(code, bench)
    if proc.poll() is not None:
        raise RuntimeError(f"the operator exited during the run (code {proc.returncode})")
    return dict(json.loads(out.read_text())["results"][0])


def run_one(
    operator: str, concurrency: int, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    """Runs one operator at one concurrency on a fresh control plane; blocks; returns the
    bench's result for it."""
    settings = RealClusterSettings(
        workdir=workdir,
        nodes=args.nodes,
        audit_reads=True,
        end_with_parent=True,
        apiserver_flags=tuple(args.apiserver_flag),
        scheduler_flags=tuple(args.scheduler_flag),
    )
    cluster = RealCluster(settings)
    lock = heavy_lock(args.lock)
    profile = args.profile_rayop and args.profile_rayop.with_suffix(f".c{concurrency}.prof")
    info = cluster.start()
    asyncio.run(install_ray_crds(str(info.kubeconfig)))
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    env = {**os.environ, "KUBECONFIG": str(info.kubeconfig)}
    operator_env = dict(env)
    if operator == "rayop" and args.cpu_samples is not None:
        sampler_dir = str(Path(__file__).resolve().parent / "cpu_sampler")
        operator_env["PYTHONPATH"] = os.pathsep.join(
            [sampler_dir, *filter(None, [env.get("PYTHONPATH")])]
        )
        operator_env["RAYOP_CPU_SAMPLES"] = str(args.cpu_samples.with_suffix(f".c{concurrency}"))
    out = workdir / "bench.json"
    log = (workdir / f"{operator}.log").open("wb")
    proc = subprocess.Popen(
        operator_command(operator, args.kuberay, info.kubeconfig, concurrency, port, profile),
        env=operator_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=end_with_parent(),
    )
    try:
        wait_for_metrics(url, proc)
        wait_until_started(workdir / f"{operator}.log", proc)
        sampler = CpuSampler({"operator": proc.pid, **info.pids})
        keep = args.teardown_seconds <= 0
        result = run_bench(proc, url, info.kubeconfig, concurrency, args, out, sampler, keep)
        audit = workdir / "logs" / AUDIT_LOG
        if args.teardown_seconds > 0:  # the bench deleted its namespace (and its events)
            result["teardown"] = teardown_phase(
                proc, str(info.kubeconfig), audit, args.teardown_seconds
            )
        else:
            result["events_by_reason"] = settled_events_by_reason(str(info.kubeconfig))
        result["requests"] = operator_breakdown(audit, float(result["seconds_until_all_ready"]))
        result["apiserver_watches"] = asyncio.run(apiserver_watch_counters(str(info.kubeconfig)))
        if args.json is not None:  # kept beside the figures, for a closer look
            shutil.copy(audit, args.json.with_suffix(f".{operator}-c{concurrency}.audit.log"))
            log.flush()
            shutil.copy(log.name, args.json.with_suffix(f".{operator}-c{concurrency}.log"))
            shutil.copytree(  # the control plane's own logs (kube-apiserver, etcd, kwok, ...)
                audit.parent,
                args.json.with_suffix(f".{operator}-c{concurrency}.logs"),
                ignore=shutil.ignore_patterns(AUDIT_LOG),
                dirs_exist_ok=True,
            )
        result["cpu_busy"] = {"started": sampler.started_wall, "per_second": sampler.busy()}
        result["busy"] = busy_summary(sampler.busy(), psutil.cpu_count() or 1)
        if args.idle_seconds > 0:
            if lock is not None:
                lock.close()
            result["idle"] = idle_phase(proc, url, args.idle_seconds, args.clusters)
        return result
    finally:
        if lock is not None:
            lock.close()
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        cluster.stop()


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ratio(rayop: Any, kuberay: Any) -> str:
    if not isinstance(rayop, int | float) or not isinstance(kuberay, int | float) or not kuberay:
        return "-"
    return f"{rayop / kuberay:.2f}"


def rows(result: dict[str, Any]) -> list[tuple[str, Any]]:
    """The reported figures of one run, in table order."""
    served = result.get("api_requests_by_verb") or {}
    own = result.get("operator_requests_by_method") or {}
    latency = result.get("ready_latency") or {}
    out: list[tuple[str, Any]] = [
        ("time until all ready (s)", result.get("seconds_until_all_ready")),
        ("ready latency p50 (s)", latency.get("p50")),
        ("ready latency p95 (s)", latency.get("p95")),
        ("timed out", result.get("timed_out")),
        (
            "pod creates (dup)",
            f"{result.get('pod_creates')} ({result.get('duplicate_pod_creates')})",
        ),
    ]
    out += [(f"apiserver {v} (all clients)", served.get(v, 0)) for v in VERBS]
    out.append(("apiserver total (all clients)", sum(served.values())))
    out += [(f"operator {m}", n) for m, n in sorted(own.items())]
    out.append(("operator requests", result.get("operator_requests")))
    watches = result.get("apiserver_watches") or {}
    for name, label in (
        ("terminated", "watchers the watch cache closed as too slow"),
        ("cache_initializations", "watch cache (re)initializations"),
    ):
        for resource, n in sorted((watches.get(name) or {}).items()):
            if n and (name == "terminated" or resource == "pods"):
                out.append((f"apiserver: {label}, {resource}", int(n)))
    out.append(("operator CPU (s)", result.get("operator_cpu_seconds")))
    if "apiserver_cpu_seconds" in result:  # an embedded plane's one server process
        out.append(("API server CPU (s)", result["apiserver_cpu_seconds"]))
    out.append(("operator peak RSS (MB)", result.get("operator_peak_rss_mb")))
    for name, busy in (result.get("busy") or {}).items():  # what bound the time
        out.append((f"creation: {name} mean cores used", busy["mean_cores"]))
        out.append((f"creation: {name} share of seconds busy", busy["busy_share"]))
    idle = result.get("idle") or {}
    if idle:
        out.append((f"idle {idle['seconds']:.0f} s: operator CPU (s)", idle["cpu_seconds"]))
        out.append(("idle: % of a core", idle["core_percent"]))
        out.append(("idle: CPU ms per cluster per minute", idle["cpu_ms_per_cluster_per_minute"]))
        out.append(("idle: operator requests", idle["requests"]))
        out.append(("idle: RSS at the end (MB)", idle["rss_mb"]))
        if "apiserver_cpu_seconds" in idle:
            out.append(("idle: API server CPU (s)", idle["apiserver_cpu_seconds"]))
        out += [(f"idle: {k[: -len(' (idle)')]}", v) for k, v in idle.items() if "(idle)" in k]
    teardown = result.get("teardown") or {}
    if teardown:
        out.append(
            ("teardown: seconds until the namespace is gone", teardown["seconds_until_gone"])
        )
        out.append(("teardown: operator CPU (s)", teardown["cpu_seconds"]))
        out.append(("teardown: operator requests", teardown["requests"]))
        out.append(("teardown: refused (403)", teardown["refused"]))
        out += [(f"teardown: {k}", v) for k, v in teardown["by_verb_resource_code"].items()]
    for reason, (objects, occurrences) in (result.get("events_by_reason") or {}).items():
        out.append((f"events {reason} (objects / occurrences)", f"{objects} / {occurrences}"))
    return out


def table(runs: list[Run]) -> str:
    """Renders a Markdown table: per concurrency, KubeRay, rayop and rayop/KubeRay."""
    values = sorted({r.concurrency for r in runs})
    by = {(r.operator, r.concurrency): r.result for r in runs}
    header = ["metric"]
    for c in values:
        header += [f"KubeRay c={c}", f"rayop c={c}", f"ratio c={c}"]
    labels: list[str] = []
    for r in runs:
        labels += [name for name, _ in rows(r.result) if name not in labels]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label in labels:
        cells = [label]
        for c in values:
            k = dict(rows(by.get(("kuberay", c), {})))
            o = dict(rows(by.get(("rayop", c), {})))
            cells += [_fmt(k.get(label)), _fmt(o.get(label)), _ratio(o.get(label), k.get(label))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def exit_on_sigterm(signum: int, frame: object) -> None:
    """Turns SIGTERM (``timeout``, a CI runner) into SystemExit, so the run's ``finally`` stops
    its operator and control plane and removes its files; SIGKILL is left to the kernel: every
    child was started with ``end_with_parent``."""
    raise SystemExit(128 + signum)


def main() -> None:
    """Parses the options, runs every (concurrency, operator) pair and prints the table."""
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--nodes", type=int, default=3, help="kwok nodes")
    parser.add_argument("--kuberay", type=Path, default=default_kuberay())
    parser.add_argument("--operators", default=",".join(OPERATORS))
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--profile-rayop", type=Path, default=None,
        help="run rayop under cProfile and write its profile here (its figures are then inflated)",
    )  # fmt: skip
    parser.add_argument(
        "--cpu-samples", type=Path, default=None,
        help="sample rayop's stacks every 4 ms of its CPU time (benchmarks/cpu_sampler) into "
        "FILE.c<concurrency>.<pid>; benchmarks/cpu_samples_report.py sums them",
    )  # fmt: skip
    parser.add_argument(
        "--lock", type=Path, default=None,
        help="flock this file for each run's creation phase (not its idle window)",
    )  # fmt: skip
    parser.add_argument(
        "--apiserver-flag", action="append", default=[],
        help="one more kube-apiserver flag (repeatable), e.g. -v=1 to log the watchers its "
        "watch cache closes; the logs are kept beside --json",
    )  # fmt: skip
    parser.add_argument(
        "--scheduler-flag", action="append", default=[],
        help="one more kube-scheduler flag (repeatable), e.g. --kube-api-qps=500 to lift the "
        "scheduler's 50 bindings per second, the time-to-ready floor of 100 x 10",
    )  # fmt: skip
    parser.add_argument(
        "--idle-seconds", type=float, default=0.0,
        help="after convergence, sample each operator's idle CPU for this long",
    )  # fmt: skip
    parser.add_argument(
        "--teardown-seconds", type=float, default=0.0,
        help="let the bench delete its namespace once all are ready and count each operator's "
        "requests until it is gone (this long at most; no event census, no idle window)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.teardown_seconds > 0 and args.idle_seconds > 0:
        parser.error("--teardown-seconds and --idle-seconds exclude each other")
    operators = [o for o in args.operators.split(",") if o]
    if "kuberay" in operators and not args.kuberay.is_file():
        parser.error(f"no KubeRay operator binary at {args.kuberay} (see the module docstring)")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="rayop-side-by-side-") as tmp:
        for c in [int(v) for v in args.concurrency.split(",")]:
            for operator in operators:
                started = time.monotonic()
                result = run_one(operator, c, args, Path(tmp) / f"{operator}-{c}")
                runs.append(Run(operator, c, result))
                print(
                    f"{operator} c={c}: all ready in {result['seconds_until_all_ready']:.1f} s "
                    f"(run took {time.monotonic() - started:.0f} s)",
                    file=sys.stderr,
                )
    print(f"\n{args.clusters} RayClusters x {args.workers} workers, real kube-apiserver + kwok\n")
    print(table(runs))
    by_label = {f"{r.operator} c={r.concurrency}": r.result for r in runs}
    print(f"\n{breakdown_table(by_label)}\n\n{timeline_table(by_label)}")
    if args.json is not None:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=2, default=str))


if __name__ == "__main__":
    main()
