"""Benchmark: KubeRay v1.7.0 beside rayop on the embedded plane, e.g. 10,000 x 3 (not a test).

Issue 33 part 1 at a size the real tier cannot hold on this machine. For each operator, one
after the other in one invocation, on a FRESH embedded plane each (``rayop apiserver`` with TLS
in a child process, pods Running and Ready 1 s after creation, as
``benchmarks/scale_curve.py`` starts it), so neither operator sees the other's objects, it
starts the operator as a child process with the same flags (``--reconcile-concurrency C --qps Q
--burst B``, leader election off; KubeRay's binary from ``scripts/controlplane-build kuberay``),
waits until its log says its RayCluster controller started its workers, and runs
``rayop bench --external-operator`` as ``benchmarks/side_by_side.py`` does (N RayClusters of a
head and W workers, until every one is ready). Then it counts the stored Events about ray.io
objects and samples the converged operator for ``--idle-seconds``. Reported per operator and as
rayop/KubeRay:

- seconds until all ready, ready latency p50/p95; pod creates and duplicates;
- API requests the plane served by verb (all clients: the bench's creates and watches too, the
  same for both) and the operator's own requests by HTTP method (its
  ``rest_client_requests_total``);
- operator CPU seconds and peak RSS during creation; the plane's CPU seconds over the same
  phase (its one process serves the operator and the bench only, so the difference between the
  two planes is the operator's cost to the server);
- what bound the time: each process's mean share of a core over creation, and the share of
  seconds in which it was busy (at least 0.9 of a core; the machine counts its 2 cores);
- idle: operator CPU as % of a core and ms per cluster per minute, its requests, the plane's CPU;
- the Events by reason (objects / occurrences).

``--lock FILE`` takes the shared heavy-run lock for each creation phase, not the idle window.
Run::

    PYTHONPATH=src .venv/bin/python benchmarks/side_by_side_embedded.py --lock /tmp/rayop-heavy.lock \\
        --clusters 10000 --workers 3 --qps 1000 --burst 2000 --idle-seconds 600 [--json out.json]
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
from typing import IO, Any

import psutil
from process_sampler import CpuSampler, busy_summary  # benchmarks/, beside this script
from scale_curve import cpu_seconds, start_apiserver, stop  # benchmarks/, beside this script
from side_by_side import (  # benchmarks/, beside this script
    OPERATORS,
    Run,
    default_kuberay,
    exit_on_sigterm,
    heavy_lock,
    idle_phase,
    install_ray_crds,
    operator_command,
    run_bench,
    settled_events_by_reason,
    table,
    wait_for_metrics,
    wait_until_started,
)

from rayop.bench.child_lifetime import end_with_parent
from rayop.cli.realcluster import free_port


def start_operator(
    operator: str, args: argparse.Namespace, kubeconfig: Path, log: IO[bytes], port: int
) -> subprocess.Popen[bytes]:
    """Starts one operator on the plane with the run's flags (``args``: concurrency, qps,
    burst, KubeRay's binary), its output into ``log``, its metrics on ``port``."""
    return subprocess.Popen(
        operator_command(
            operator, args.kuberay, kubeconfig, args.concurrency, port,
            rate=(args.qps, args.burst),
        ),
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        preexec_fn=end_with_parent(),
    )  # fmt: skip


def run_one(operator: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Runs one operator on a fresh embedded plane; blocks; returns the bench's result for it
    with the plane's CPU, the event census and the idle window added."""
    workdir.mkdir(parents=True)
    lock = heavy_lock(args.lock)
    plane, kubeconfig = start_apiserver(workdir, None, tls=True)
    asyncio.run(install_ray_crds(str(kubeconfig)))
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    log_path = workdir / f"{operator}.log"
    log = log_path.open("wb")
    proc = start_operator(operator, args, kubeconfig, log, port)
    server = psutil.Process(plane.pid)
    try:
        wait_for_metrics(url, proc)
        wait_until_started(log_path, proc)
        server0 = cpu_seconds(server)
        sampler = CpuSampler({"operator": proc.pid, "apiserver": plane.pid})
        result = run_bench(
            proc, url, kubeconfig, args.concurrency, args, workdir / "bench.json", sampler
        )
        result["apiserver_cpu_seconds"] = cpu_seconds(server) - server0
        result["load_average"] = os.getloadavg()
        result["cpu_busy"] = {"started": sampler.started_wall, "per_second": sampler.busy()}
        result["busy"] = busy_summary(sampler.busy(), psutil.cpu_count() or 1)
        result["events_by_reason"] = settled_events_by_reason(str(kubeconfig), limit=120.0)
        if lock is not None:
            lock.close()
            lock = None
        if args.idle_seconds > 0:
            server_idle0 = cpu_seconds(server)
            result["idle"] = idle_phase(proc, url, args.idle_seconds, args.clusters)
            result["idle"]["apiserver_cpu_seconds"] = cpu_seconds(server) - server_idle0
            result["idle"]["load_average"] = os.getloadavg()
        return result
    finally:
        stop(proc)
        log.close()
        stop(plane)
        if lock is not None:
            lock.close()


def main() -> None:
    """Parses the options, runs each operator in turn and prints the table."""
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--qps", type=float, default=1000.0)
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--kuberay", type=Path, default=default_kuberay())
    parser.add_argument("--operators", default=",".join(OPERATORS))
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    parser.add_argument("--idle-seconds", type=float, default=0.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--lock", type=Path, default=None,
        help="flock this file for each run's creation phase (not its idle window)",
    )  # fmt: skip
    args = parser.parse_args()
    operators = [o for o in args.operators.split(",") if o]
    if "kuberay" in operators and not args.kuberay.is_file():
        parser.error(f"no KubeRay operator binary at {args.kuberay}")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="rayop-side-by-side-embedded-") as tmp:
        for operator in operators:
            started = time.monotonic()
            result = run_one(operator, args, Path(tmp) / operator)
            runs.append(Run(operator, args.concurrency, result))
            print(
                f"{operator}: all ready in {result['seconds_until_all_ready']:.1f} s "
                f"(run took {time.monotonic() - started:.0f} s, load {result['load_average']})",
                file=sys.stderr,
                flush=True,
            )
            if args.json is not None:
                args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=2))
    print(
        f"\n{args.clusters} RayClusters x {args.workers} workers, embedded plane (TLS), "
        f"c={args.concurrency}, qps {args.qps:g} / burst {args.burst}\n"
    )
    print(table(runs))


if __name__ == "__main__":
    main()
