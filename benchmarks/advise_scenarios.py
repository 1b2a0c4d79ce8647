"""Benchmark: does `rayop advise` say what running the alternative measures? (issue 31; not a test)

For each scenario with a known right answer, `rayop bench` runs the operator at
``--reconcile-concurrency`` 1 and 2 on a fresh embedded plane (rayop in the bench's process);
every run carries the verdict `rayop advise` draws from that run's own metrics (its measured
phase, a scrape every 2 s), and the bench checks it against the outcome measured at the value it
pointed to (:mod:`rayop.bench.advise_check`). This prints, per scenario, what advise said at 1,
what 2 measured, and whether they agree.

Scenarios (the right answer in brackets):

- ``saturated``: clusters created faster than one worker reconciles them, calm API [raise];
- ``api-slowdown``: clusters created at 10 a second; halfway through, the API server slows down
  by 0.1 s a request and, serving one request at a time (``--api-service-slots 1``), is at its
  capacity [do not raise];
- ``throttled``: clusters created at 5 a second under ``--qps 20 --burst 40`` [keep: raise qps
  first];
- ``idle``: one cluster a second, easily served [keep].

Run (under the shared lock on a shared machine)::

    flock /tmp/rayop-heavy.lock .venv/bin/python benchmarks/advise_scenarios.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LOAD = ["--scenario", "churn", "--clusters", "1200", "--workers", "3", "--churn-rate", "30"]
"""Faster than one worker reconciles on a quiet 2-core machine (at 15 a second it kept up)."""
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


def run(name: str, args: list[str], out: Path) -> dict[str, Any]:
    """Runs one scenario's bench at 1 and 2 workers; returns its JSON document."""
    cmd = [
        sys.executable, "-m", "rayop", "bench", *args, "--concurrency", "1,2",
        "--in-process", "--timeout", "900", "--json", str(out),
    ]  # fmt: skip
    print(f"== {name}: {' '.join(cmd[3:])}", flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def main() -> int:
    """Runs every scenario (or those named) and prints advise's verdicts beside the outcomes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), default=None)
    parser.add_argument("--json", type=Path, help="write every scenario's results here")
    opts = parser.parse_args()
    names = opts.only or list(SCENARIOS)
    summary: dict[str, Any] = {}
    agreed = 0
    with tempfile.TemporaryDirectory(prefix="advise-scenarios-") as tmp:
        for name in names:
            args, expected = SCENARIOS[name]
            doc = run(name, args, Path(tmp) / f"{name}.json")
            checks = doc["recommendation"]["advise_checks"]
            at_one = next((c for c in checks if c["concurrency"] == 1), None)
            ready = {r["concurrency"]: r["seconds_until_all_ready"] for r in doc["results"]}
            wait = {r["concurrency"]: r["queue_wait_p99"] for r in doc["results"]}
            advice = {r["concurrency"]: r["advice"] for r in doc["results"]}
            summary[name] = {
                "expected": expected, "check": at_one, "ready": ready, "wait_p99": wait,
                "advice": advice,
            }  # fmt: skip
            agreed += bool(at_one and at_one["agrees"])
            said = "no verdict" if at_one is None else at_one["said"]
            limit = at_one["next_limit"] if at_one else None
            outcome = (
                "?" if at_one is None
                else "better" if at_one["alternative_better"] else "not better"
            )  # fmt: skip
            print(
                f"{name:>13}: right answer {expected}; advise at 1: {said} (next limit {limit}); "
                f"2 measured {outcome} (all ready {ready.get(1)} s -> {ready.get(2)} s, wait "
                f"p99 {wait.get(1)} -> {wait.get(2)}): "
                f"{'agrees' if at_one and at_one['agrees'] else 'DISAGREES'}",
                flush=True,
            )
    print(f"advise agreed with the measured outcome in {agreed} of {len(names)} scenarios")
    if opts.json:
        opts.json.write_text(json.dumps(summary, indent=2))
    return 0 if agreed == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
