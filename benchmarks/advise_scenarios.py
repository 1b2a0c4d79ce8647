"""Benchmark: does `rayop advise` say what running the alternative measures? (issue 31; not a test)

For each scenario with a known right answer, `rayop bench` runs the operator (rayop in the
bench's process, or KubeRay v1.7.0 started by the bench with ``--operator-command``) at
``--reconcile-concurrency`` 1 and 2 on a fresh in-process embedded plane; every run carries the
verdict `rayop advise` draws from that run's own metrics (its measured phase, a scrape every 2 s),
and the bench checks it against the outcome measured at the value it pointed to
(:mod:`rayop.bench.advise_check`). Each run's window is also saved (``--advise-windows``) and
``rayop advise --before c1.json --after c2.json`` compares the two as a user would after raising
1 -> 2: it must say keep exactly where 2 measured better, and revert elsewhere. This prints, per
scenario, what advise said at 1, what 2 measured, the comparison, and whether they agree.

Scenarios (the right answer in brackets):

- ``saturated``: clusters created faster than one worker reconciles them, calm API (30 ms a
  request at any load) [raise];
- ``api-slowdown``: clusters created at 10 a second; halfway through, the API server slows down
  by 0.1 s a request and, serving one request at a time (``--api-service-slots 1``), is at its
  capacity [do not raise];
- ``throttled``: clusters created at 5 a second under ``--qps 20 --burst 40`` [keep: raise qps
  first];
- ``idle``: one cluster a second, easily served [keep];
- ``load-change``: 1 worker at 10 clusters a second, then 2 workers at 20 a second [the
  comparison refuses: the load changed].

Run (under the shared lock on a shared machine)::

    flock /tmp/rayop-heavy.lock .venv/bin/python benchmarks/advise_scenarios.py \
        [--operator rayop|kuberay] [--kuberay PATH] [--only NAME ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LOAD_CHANGE = (
    ["--scenario", "churn", "--clusters", "300", "--workers", "1", "--churn-rate", "10"],
    ["--scenario", "churn", "--clusters", "600", "--workers", "1", "--churn-rate", "20"],
)  # fmt: skip
"""The load-change scenario's two runs: 1 worker at 10 clusters a second, 2 at 20."""

KUBERAY_COMMAND = (
    "{binary} --kubeconfig={{kubeconfig}} --reconcile-concurrency={{concurrency}} "
    "--metrics-addr=127.0.0.1:{{metrics_port}} --health-probe-bind-address=0 "
    "--enable-leader-election=false --qps={{qps}} --burst={{burst}}"
)
"""KubeRay v1.7.0's flags for the bench's ``--operator-command`` (its --qps/--burst are the
client's, as rayop's)."""

LOAD = [
    "--scenario", "churn", "--clusters", "900", "--workers", "3", "--churn-rate", "15",
    "--api-latency", "0.03",
]  # fmt: skip
"""Workers are the limit, for both operators: every API request takes 30 ms (a remote API server,
calm: the latency is the same at any load), so a pass that makes several requests one after
another takes long enough that one worker cannot keep up with 15 new clusters a second. Without
the latency the plane was the limit: at 30 a second the in-process plane (one Python process) was
saturated and 2 workers measured no better for either operator."""
SCENARIOS: dict[str, tuple[list[str], str]] = {
    "saturated": (LOAD, "raise"),
    "api-slowdown": (
        ["--scenario", "api-slowdown", "--clusters", "200", "--workers", "3",
         "--churn-rate", "10", "--api-service-slots", "1"],
        "do not raise",
    ),
    "throttled": (
        ["--scenario", "churn", "--clusters", "200", "--workers", "3", "--churn-rate", "5",
         "--qps", "20", "--burst", "40"],
        "keep (raise qps first)",
    ),
    "idle": (
        ["--scenario", "churn", "--clusters", "60", "--workers", "1", "--churn-rate", "1"],
        "keep",
    ),
}  # fmt: skip


def default_kuberay() -> Path:
    """Returns ``$RAYOP_KUBERAY_BINARY`` or the cached KubeRay v1.7.0 operator binary."""
    explicit = os.environ.get("RAYOP_KUBERAY_BINARY")
    if explicit:
        return Path(explicit)
    cache = Path(os.environ.get("RAYOP_CACHE_DIR") or Path.home() / ".cache" / "rayop")
    return cache / "kuberay" / "v1.7.0" / "ray-operator"


def bench(args: list[str], concurrency: str, windows: Path, out: Path, kuberay: Path | None) -> Any:
    """Runs one `rayop bench` (saving its windows); returns its JSON document."""
    cmd = [
        sys.executable, "-m", "rayop", "bench", *args, "--concurrency", concurrency,
        "--in-process", "--timeout", "900", "--json", str(out), "--advise-windows", str(windows),
    ]  # fmt: skip
    if kuberay is not None:
        cmd += ["--operator-command", KUBERAY_COMMAND.format(binary=kuberay)]
    print(f"== {' '.join(cmd[3:])}", flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def compare(windows: Path) -> dict[str, Any]:
    """`rayop advise --before c1.json --after c2.json --json`: the comparison of 1 -> 2."""
    cmd = [
        sys.executable, "-m", "rayop", "advise", "--before", str(windows / "c1.json"),
        "--after", str(windows / "c2.json"), "--json",
    ]  # fmt: skip
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    comparison: dict[str, Any] = json.loads(done.stdout)["comparison"]
    return comparison


def scenario(name: str, tmp: Path, kuberay: Path | None) -> dict[str, Any]:
    """Runs one scenario; returns its figures, the verdicts and whether each agrees."""
    windows = tmp / name
    if name == "load-change":
        before, after = LOAD_CHANGE
        bench(before, "1", windows, tmp / f"{name}-1.json", kuberay)
        bench(after, "2", windows, tmp / f"{name}-2.json", kuberay)
        comparison = compare(windows)
        agrees = comparison["verdict"] == "incomparable"
        print(
            f"{name:>13}: right answer: no comparison; rayop advise --before/--after said "
            f"{comparison['verdict']} ({'; '.join(comparison['reasons'][:1])}): "
            f"{'agrees' if agrees else 'DISAGREES'}",
            flush=True,
        )
        return {"expected": "incomparable", "comparison": comparison, "agrees": agrees}
    args, expected = SCENARIOS[name]
    doc = bench(args, "1,2", windows, tmp / f"{name}.json", kuberay)
    checks = doc["recommendation"]["advise_checks"]
    at_one = next((c for c in checks if c["concurrency"] == 1), None)
    ready = {r["concurrency"]: r["seconds_until_all_ready"] for r in doc["results"]}
    wait = {r["concurrency"]: r["queue_wait_p99"] for r in doc["results"]}
    comparison = compare(windows)
    better = bool(at_one and at_one["alternative_better"])
    compare_agrees = comparison["verdict"] == ("keep" if better else "revert")
    agrees = bool(at_one and at_one["agrees"]) and compare_agrees
    said = "no verdict" if at_one is None else at_one["said"]
    limit = at_one["next_limit"] if at_one else None
    print(
        f"{name:>13}: right answer {expected}; advise at 1: {said} (next limit {limit}); "
        f"2 measured {'better' if better else 'not better'} (all ready {ready.get(1)} s -> "
        f"{ready.get(2)} s, wait p99 {wait.get(1)} -> {wait.get(2)}); 1 -> 2 compared: "
        f"{comparison['verdict']}: {'agrees' if agrees else 'DISAGREES'}",
        flush=True,
    )
    return {
        "expected": expected, "check": at_one, "ready": ready, "wait_p99": wait,
        "advice": {r["concurrency"]: r["advice"] for r in doc["results"]},
        "comparison": comparison, "agrees": agrees,
    }  # fmt: skip


def main() -> int:
    """Runs every scenario (or those named) and prints advise's verdicts beside the outcomes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names_all = [*SCENARIOS, "load-change"]
    parser.add_argument("--only", nargs="*", choices=names_all, default=None)
    parser.add_argument("--operator", choices=("rayop", "kuberay"), default="rayop")
    parser.add_argument("--kuberay", type=Path, default=default_kuberay())
    parser.add_argument("--json", type=Path, help="write every scenario's results here")
    opts = parser.parse_args()
    kuberay: Path | None = None
    if opts.operator == "kuberay":
        if not opts.kuberay.is_file():
            parser.error(f"--kuberay {opts.kuberay}: no such binary (scripts/controlplane-build)")
        kuberay = opts.kuberay
    names = opts.only or names_all
    summary: dict[str, Any] = {"operator": opts.operator}
    with tempfile.TemporaryDirectory(prefix="advise-scenarios-") as tmp:
        for name in names:
            summary[name] = scenario(name, Path(tmp), kuberay)
    agreed = sum(1 for n in names if summary[n]["agrees"])
    print(f"{opts.operator}: advise agreed with the measured outcome in {agreed} of {len(names)}")
    if opts.json:
        opts.json.write_text(json.dumps(summary, indent=2))
    return 0 if agreed == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
