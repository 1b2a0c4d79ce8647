"""Probe: how fast the machine's CPU runs a fixed piece of work, once a second (not a test).

A benchmark's wall times and CPU seconds assume the CPU runs at one speed. On a shared virtual
machine it may not: another tenant, the host's frequency or a cache shared with the other
processes can make the same work cost more CPU seconds (steal time the guest does not see is
charged to whatever ran). Beside a benchmark, this probe runs the same pure-Python loop every
``--interval`` seconds and records its CPU time (``time.thread_time``: scheduling waits do not
count) and its wall time, one JSON line per sample::

    {"at": <unix time>, "cpu_ms": ..., "wall_ms": ...}

A run whose samples' ``cpu_ms`` is higher than another's ran on a slower CPU: each process's
CPU seconds and each request's latency are inflated alike. The loop takes about 10 ms a sample
on this project's machine (1 % of a core at the default interval). Run::

    .venv/bin/python benchmarks/cpu_speed_probe.py --out probe.jsonl [--interval 1]

and stop it with SIGTERM or Ctrl-C; ``--summary FILE [--since T --until T]`` prints the median and
the 10th and 90th percentiles of ``cpu_ms`` between two unix times.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

WORK = 200_000
"""Iterations of the fixed loop."""


def fixed_work(n: int = WORK) -> int:
    """The probe's fixed work: integer arithmetic in the interpreter's loop."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def sample() -> dict[str, float]:
    """Runs the fixed work once; returns when, its CPU ms and its wall ms."""
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    fixed_work()
    cpu1, wall1 = time.thread_time(), time.perf_counter()
    return {"at": time.time(), "cpu_ms": 1000 * (cpu1 - cpu0), "wall_ms": 1000 * (wall1 - wall0)}


def summary(samples: list[dict[str, Any]], since: float, until: float) -> dict[str, float]:
    """The samples' ``cpu_ms`` between two unix times: count, median, 10th and 90th
    percentiles (empty when none fell between them)."""
    cpu = sorted(s["cpu_ms"] for s in samples if since <= s["at"] <= until)
    if not cpu:
        return {}
    deciles = statistics.quantiles(cpu, n=10) if len(cpu) > 1 else [cpu[0]] * 9
    return {"n": len(cpu), "p10": deciles[0], "p50": statistics.median(cpu), "p90": deciles[8]}


def main() -> None:
    """Samples until stopped, or summarizes a file of samples."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="append samples here")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--summary", type=Path, default=None, help="summarize this file")
    parser.add_argument("--since", type=float, default=0.0)
    parser.add_argument("--until", type=float, default=float("inf"))
    args = parser.parse_args()
    if args.summary is not None:
        lines = args.summary.read_text().splitlines()
        print(json.dumps(summary([json.loads(x) for x in lines if x], args.since, args.until)))
        return
    if args.out is None:
        parser.error("--out FILE is needed to sample (or --summary FILE to summarize)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with args.out.open("a") as out:
        while True:
            out.write(json.dumps(sample()) + "\n")
            out.flush()
            time.sleep(args.interval)


if __name__ == "__main__":
    main()
