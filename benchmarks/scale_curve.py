"""Benchmark: rayop's cost curve at 100 -> 1,000 -> 10,000 RayClusters on one process (not a test).

For each size in ``--sizes``, on a FRESH embedded control plane (``rayop apiserver --no-tls`` in a
child process; pods Running and Ready 1 s after creation), it starts ``rayop run`` as a second
child process (``--reconcile-concurrency C --qps Q --burst B``, leader election off, the admin
kubeconfig) and runs::

    rayop bench --kubeconfig K --external-operator --external-metrics-url URL \
        --external-operator-pid PID --concurrency C --clusters N --workers W --json ...

which creates N RayClusters of one head and W workers and waits until every one is ready. Then
it samples the converged operator for ``--idle-seconds`` (CPU, requests, RSS). Reported per
size, and per cluster, so the curve shows whether the cost grows linearly:

- seconds until all ready, ready latency p50/p95;
- operator CPU seconds (user + system, psutil) and peak RSS during creation; RSS before the
  first cluster (the floor) and what each cluster adds above it;
- the API server child's CPU seconds over the same phase (it shares the 2 cores);
- idle: the operator's CPU over the window as % of one core and ms per cluster per minute;
- ``scrapes``: a thread scrapes the operator's /metrics every ``--scrape-interval`` s (0: never)
  and times each, per phase (creation, idle): how long a scraper waits on a busy operator
  (``scrape_samples`` holds each one).

``--profile DIR`` runs the operator and the API server under :mod:`cProfile` and writes
``DIR/<size>-create.prof``, ``DIR/<size>-idle.prof`` and ``DIR/<size>-apiserver-*.prof`` (read
them with ``python -m pstats``); the profiler roughly doubles the CPU, so a profiled run's
figures are not the curve. ``--lock FILE`` takes the shared heavy-run lock (``flock``) for each
creation phase only, and lets it go for the idle window. The child is this
file run as ``scale_curve.py --profiled-child PREFIX -- rayop-args...``: SIGUSR1 writes the
profile so far to ``PREFIX-<n>.prof`` and starts a new one; the end of the process writes the
last.

``--cpu-samples FILE`` runs both children under the CPU-time sampler (``benchmarks/cpu_sampler``,
``SIGPROF`` every 4 ms of the process's own CPU, ~1 % overhead) and writes
``FILE.<size>-operator.create``, ``FILE.<size>-operator.idle`` and the same for ``-apiserver``
(read them with ``benchmarks/cpu_samples_report.py``; their header holds the phase's cyclic GC
collections and CPU seconds per generation).

Run::

    .venv/bin/python benchmarks/scale_curve.py --lock /tmp/rayop-heavy.lock \
        --sizes 100,1000,10000 [--workers 3] [--concurrency 8] [--qps -1] [--idle-seconds 300]
"""

from __future__ import annotations

import argparse
import cProfile
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import FrameType
from typing import IO, Any

import psutil
import yaml
from side_by_side import idle_phase, wait_for_metrics

from rayop.bench.child_lifetime import end_with_parent
from rayop.cli.realcluster import free_port

REPO = Path(__file__).resolve().parents[1]


SAMPLER = Path(__file__).resolve().parent / "cpu_sampler"


def sampled_env(samples: Path | None) -> dict[str, str] | None:
    """Returns the environment that puts a child under the CPU-time sampler writing
    ``samples.<pid>[.<n>]``; None (inherit) when ``samples`` is None."""
    if samples is None:
        return None
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SAMPLER), *filter(None, [env.get("PYTHONPATH")])])
    env["RAYOP_CPU_SAMPLES"] = str(samples)
    return env


def collect_samples(samples: Path | None, pid: int) -> None:
    """Renames a sampled child's files ``samples.<pid>.0`` (creation, ended by SIGUSR2) and
    ``samples.<pid>`` (the rest, written at exit) to ``samples.create`` and ``samples.idle``."""
    if samples is None:
        return
    for written, phase in ((f"{pid}.0", "create"), (str(pid), "idle")):
        source = samples.with_name(f"{samples.name}.{written}")
        if source.exists():
            source.rename(samples.with_name(f"{samples.name}.{phase}"))


def start_apiserver(
    workdir: Path, profile: Path | None, samples: Path | None = None, tls: bool = False
) -> tuple[subprocess.Popen[str], Path]:
    """Starts ``rayop apiserver`` (plain HTTP, or HTTPS when ``tls``) as a child, under the
    profiling wrapper when ``profile``, under the CPU-time sampler when ``samples``; returns it
    and its kubeconfig."""
    kubeconfig = workdir / "kubeconfig.yaml"
    flags = [
        "apiserver", *([] if tls else ["--no-tls"]),
        "--kubeconfig-out", str(kubeconfig), "--pod-pending-delay", "0",
        "--pod-running-delay", "1", "--pod-ready-delay", "0",
    ]  # fmt: skip
    cmd = [sys.executable, "-m", "rayop", *flags]
    if profile is not None:
        cmd = [sys.executable, __file__, "--profiled-child", str(profile), "--", *flags]
    log = (workdir / "apiserver.log").open("wb")
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        preexec_fn=end_with_parent(),
        env=sampled_env(samples),
    )
    log.close()
    assert proc.stdout is not None
    if not proc.stdout.readline():
        raise RuntimeError(f"rayop apiserver exited before it was ready (see {log.name})")
    yaml.safe_load(kubeconfig.read_text())
    return proc, kubeconfig


def operator_command(
    args: argparse.Namespace, kubeconfig: Path, port: int, profile: Path | None
) -> list[str]:
    """Returns ``rayop run``'s command line, under the profiling wrapper when ``profile``."""
    flags = [
        "run", f"--kubeconfig={kubeconfig}",
        f"--reconcile-concurrency={args.concurrency}", f"--qps={args.qps}",
        f"--burst={args.burst}", f"--metrics-addr=:{port}",
        "--health-probe-bind-address=0", "--enable-leader-election=false",
    ]  # fmt: skip
    if profile is None:
        return [sys.executable, "-m", "rayop", *flags]
    return [sys.executable, __file__, "--profiled-child", str(profile), "--", *flags]


def stop(proc: subprocess.Popen[Any], timeout: float = 30.0) -> None:
    """Terminates a child and waits for it (SIGKILL after ``timeout`` s)."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(process: psutil.Process) -> float:
    """Returns a process's user + system CPU seconds."""
    times = process.cpu_times()
    return float(times.user + times.system)


def run_size(clusters: int, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Measures one size on a fresh control plane and operator; blocks; returns the figures."""
    workdir.mkdir(parents=True)
    profile = args.profile / str(clusters) if args.profile else None
    server_profile = args.profile / f"{clusters}-apiserver" if args.profile else None
    samples = args.cpu_samples
    operator_samples = samples.with_name(f"{samples.name}.{clusters}-operator") if samples else None
    server_samples = samples.with_name(f"{samples.name}.{clusters}-apiserver") if samples else None
    lock = heavy_lock(args.lock)
    apiserver, kubeconfig = start_apiserver(workdir, server_profile, server_samples)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    log = (workdir / "operator.log").open("wb")
    operator = subprocess.Popen(
        operator_command(args, kubeconfig, port, profile),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=end_with_parent(),
        env=sampled_env(operator_samples),
    )
    server = psutil.Process(apiserver.pid)
    probe = ScrapeProbe(url, interval=args.scrape_interval)
    try:
        wait_for_metrics(url, operator)
        if args.scrape_interval > 0:
            probe.start()
        floor_mb = psutil.Process(operator.pid).memory_info().rss / 1e6
        server_cpu0 = cpu_seconds(server)
        out = workdir / "bench.json"
        bench = [
            sys.executable, "-m", "rayop", "bench", "--kubeconfig", str(kubeconfig),
            "--external-operator", "--external-metrics-url", url,
            "--external-operator-pid", str(operator.pid),
            "--concurrency", str(args.concurrency), "--clusters", str(clusters),
            "--workers", str(args.workers), "--timeout", str(args.timeout), "--json", str(out), "--keep-objects",
        ]  # fmt: skip
        subprocess.run(bench, check=True, stdout=subprocess.DEVNULL)
        if operator.poll() is not None:
            raise RuntimeError(f"the operator exited during the run (see {log.name})")
        result = dict(json.loads(out.read_text())["results"][0])
        result["apiserver_cpu_seconds"] = cpu_seconds(server) - server_cpu0
        result["operator_floor_rss_mb"] = floor_mb
        if profile is not None:
            os.kill(operator.pid, signal.SIGUSR1)
            os.kill(apiserver.pid, signal.SIGUSR1)
        if samples is not None:
            os.kill(operator.pid, signal.SIGUSR2)
            os.kill(apiserver.pid, signal.SIGUSR2)
        if lock is not None:
            lock.close()
            lock = None
        probe.phase = "idle"
        server_idle0 = cpu_seconds(server)
        result["idle"] = idle_phase(operator, url, args.idle_seconds, clusters)
        result["idle"]["apiserver_cpu_seconds"] = cpu_seconds(server) - server_idle0
        probe.stop()
        result["scrapes"] = scrape_summary(probe.samples)
        result["scrape_samples"] = probe.samples
        return result
    finally:
        probe.stop()
        stop(operator)
        log.close()
        stop(apiserver)
        collect_samples(operator_samples, operator.pid)
        collect_samples(server_samples, apiserver.pid)
        if lock is not None:
            lock.close()
        for prefix in (profile, server_profile):
            for n, phase in ((0, "create"), (1, "idle")):
                if prefix is None:
                    continue
                written = prefix.with_name(f"{prefix.name}-{n}.prof")
                if written.exists():
                    written.rename(written.with_name(f"{prefix.name}-{phase}.prof"))


class ScrapeProbe:
    """Scrapes the operator's /metrics every ``interval`` s from a thread and times each scrape
    (connect to last byte), tagged with the phase the run is in: how long a scraper waits on a
    busy operator, and how large the page is. A scrape that fails or exceeds ``timeout`` is
    recorded as failed, with its reason, never dropped."""

    def __init__(self, url: str, interval: float = 15.0, timeout: float = 120.0) -> None:
        self.url = url
        self.interval = interval
        self.timeout = timeout
        self.phase = "create"
        self.samples: list[dict[str, Any]] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scrape-probe", daemon=True)
        self._t0 = time.monotonic()

    def start(self) -> None:
        """Starts scraping; returns at once."""
        self._thread.start()

    def stop(self) -> None:
        """Stops scraping; blocks until a scrape in flight has ended (a no-op when not
        started, or stopped already)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            self.samples.append(self.scrape())

    def scrape(self) -> dict[str, Any]:
        """Scrapes once; returns the sample (phase, start, seconds, bytes, error)."""
        phase, started = self.phase, time.monotonic()
        size, error = 0, ""
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout) as resp:
                size = len(resp.read())
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
        return {
            "phase": phase,
            "at": started - self._t0,
            "seconds": time.monotonic() - started,
            "bytes": size,
            "error": error,
        }


def scrape_summary(samples: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per phase: scrapes, failures, median and longest seconds, scrapes over 10 s, largest
    page (bytes)."""
    out: dict[str, dict[str, float]] = {}
    for phase in sorted({s["phase"] for s in samples}):
        mine = [s for s in samples if s["phase"] == phase]
        seconds = sorted(s["seconds"] for s in mine)
        out[phase] = {
            "scrapes": len(mine),
            "failed": sum(1 for s in mine if s["error"]),
            "median_seconds": seconds[len(seconds) // 2],
            "max_seconds": seconds[-1],
            "over_10s": sum(1 for v in seconds if v > 10.0),
            "max_bytes": max(s["bytes"] for s in mine),
        }
    return out


def heavy_lock(path: Path | None) -> IO[bytes] | None:
    """Takes the shared heavy-run lock (``flock``), blocking; None when no path is given.

    Only the creation phase holds it: an idle window costs a few CPU seconds."""
    if path is None:
        return None
    handle = path.open("ab")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def row(clusters: int, r: dict[str, Any]) -> list[str]:
    """One size's figures as Markdown table cells."""
    latency = r.get("ready_latency") or {}
    idle = r["idle"]
    cpu, peak, floor = (
        r["operator_cpu_seconds"],
        r["operator_peak_rss_mb"],
        r["operator_floor_rss_mb"],
    )
    # the bench reports MiB, psutil bytes: both are turned into MB here
    peak_mb = peak * 2**20 / 1e6
    return [
        f"{clusters:,}" + (" (timed out)" if r.get("timed_out") else ""),
        f"{r.get('seconds_until_all_ready') or 0:.1f}",
        f"{latency.get('p50', 0):.1f} / {latency.get('p95', 0):.1f}",
        f"{cpu:.1f}",
        f"{1000 * cpu / clusters:.1f}",
        f"{r['apiserver_cpu_seconds']:.1f}",
        f"{peak_mb:.0f}",
        f"{1000 * (peak_mb - floor) / clusters:.1f}",
        f"{idle['core_percent']:.2f}",
        f"{idle['cpu_ms_per_cluster_per_minute']:.3f}",
        f"{idle['requests']:.0f}",
    ]


HEADER = [
    "clusters", "all ready (s)", "ready p50 / p95 (s)", "operator CPU (s)",
    "CPU ms per cluster", "API server CPU (s)", "peak RSS (MB)", "KB per cluster above floor",
    "idle % of a core", "idle CPU ms per cluster per minute", "idle requests",
]  # fmt: skip


def profiled_child(prefix: Path, argv: list[str]) -> None:
    """Runs the rayop CLI under cProfile; SIGUSR1 writes ``prefix-<n>.prof`` and starts anew."""
    from rayop.cli.commands import loaded_app
    from rayop.cli.flags import normalize_argv

    app = loaded_app()

    profiler = cProfile.Profile()
    written = 0

    def dump(_sig: int = 0, _frame: FrameType | None = None) -> None:
        nonlocal written
        profiler.disable()
        profiler.dump_stats(str(prefix.with_name(f"{prefix.name}-{written}.prof")))
        written += 1
        profiler.clear()
        profiler.enable()

    signal.signal(signal.SIGUSR1, dump)
    profiler.enable()
    try:
        app(args=normalize_argv(argv), prog_name="rayop", standalone_mode=False)
    finally:
        dump()
        profiler.disable()


def main() -> None:
    """Parses the options, runs every size in turn and prints the curve."""
    if len(sys.argv) > 2 and sys.argv[1] == "--profiled-child":
        profiled_child(Path(sys.argv[2]), sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--qps", type=float, default=-1.0, help="negative: unthrottled")
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument(
        "--idle-seconds", type=float, default=300.0, help="one RayCluster requeue period"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per size")
    parser.add_argument("--profile", type=Path, default=None, help="write cProfile files here")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--cpu-samples", type=Path, default=None,
        help="run both children under benchmarks/cpu_sampler; write FILE.<size>-<child>.<phase>",
    )  # fmt: skip
    parser.add_argument(
        "--scrape-interval", type=float, default=15.0,
        help="time a /metrics scrape every this many seconds (0: never)",
    )  # fmt: skip
    parser.add_argument(
        "--lock", type=Path, default=None,
        help="flock this file around each creation phase (not the idle window)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        args.profile = args.profile.resolve()
    if args.cpu_samples is not None:
        args.cpu_samples = args.cpu_samples.resolve()
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rayop-scale-curve-") as tmp:
        for clusters in [int(v) for v in args.sizes.split(",")]:
            started = time.monotonic()
            results[clusters] = run_size(clusters, args, Path(tmp) / str(clusters))
            print(
                f"{clusters} x {args.workers}: ready in "
                f"{results[clusters].get('seconds_until_all_ready') or 0:.1f} s "
                f"(size took {time.monotonic() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            if args.json is not None:
                args.json.write_text(json.dumps(results, indent=2, default=str))
    print(
        f"\nRayClusters x {args.workers} workers, embedded plane, c={args.concurrency}, "
        f"qps {args.qps}, idle window {args.idle_seconds:.0f} s\n"
    )
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for clusters, result in results.items():
        print("| " + " | ".join(row(clusters, result)) + " |")


if __name__ == "__main__":
    main()
