"""Benchmark: the Event writes ``--decision-events`` adds per pass while N RayClusters converge
(not a test).

Runs the operator (RayCluster controller) on an embedded control plane twice in one process,
``--decision-events`` off then on, each time creating N RayClusters of W workers and waiting
until all are ready (and ``--settle`` seconds more). Every pass is counted (and those that ended
waiting: a ``wait`` note in their account); every Event write is taken from the API server's
audit (creates and series patches), those of ``Waiting`` Events apart. ``--watch-delay`` holds
each watch event back (informer lag) so that more passes wait. Put a checkout's ``src`` first
on ``PYTHONPATH`` to measure it::

    PYTHONPATH=src .venv/bin/python benchmarks/decision_events.py --clusters 100 --workers 2
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from rayop.bench.scenarios import raycluster
from rayop.controllers.assembly.decision_events import REASON
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.decisions import current_account
from rayop.runtime.reconcile import ReconcileFunc, Request, Result
from rayop.sim.apiserver.faults import Faults
from rayop.testing import eventually, open_control_plane, open_operator

NAMESPACE = "decided"


@dataclass
class Run:
    """What one run counted."""

    passes: int = 0
    waited: int = 0
    event_writes: int = 0
    waiting_writes: int = 0
    waiting_events: int = 0
    waiting_occurrences: int = 0
    seconds: float = 0.0


async def measure(clusters: int, workers: int, decision_events: bool, args: argparse.Namespace) -> Run:
    """Runs the operator over ``clusters`` new RayClusters until they are ready; counts."""
    run = Run()

    def counting(reconcile: ReconcileFunc) -> ReconcileFunc:
        async def counted(request: Request) -> Result:
            try:
                return await reconcile(request)
            finally:
                run.passes += 1
                account = current_account()
                if account is not None and account.noted("wait"):
                    run.waited += 1

        return counted

    faults = Faults(watch_delay=args.watch_delay)
    async with (
        open_control_plane(faults=faults) as plane,
        open_operator(
            plane,
            concurrency=args.concurrency,
            ready_timeout=60,
            wrap_reconcile=counting,
            decision_events=decision_events,
        ),
    ):
        await plane.namespace(NAMESPACE)
        started = time.monotonic()
        for i in range(clusters):
            await plane.create(RAY_CLUSTERS, raycluster(f"rc{i}", workers, namespace=NAMESPACE),
                               NAMESPACE)  # fmt: skip

        def converged() -> bool:
            return all(plane.raycluster_converged(NAMESPACE, f"rc{i}") for i in range(clusters))

        await eventually(converged, timeout=900, what="every RayCluster ready")
        run.seconds = time.monotonic() - started
        await asyncio.sleep(args.settle)
        waiting = set()
        for event in plane.events(NAMESPACE):
            if event.get("reason") == REASON:
                waiting.add(event["metadata"]["name"])
                run.waiting_occurrences += int((event.get("series") or {}).get("count") or 1)
        run.waiting_events = len(waiting)
        for write in plane.cp.audit.writes:
            if write.resource == "events" and write.namespace == NAMESPACE and write.code < 300:
                run.event_writes += 1
                run.waiting_writes += write.name in waiting
    return run


def _row(name: str, run: Run) -> str:
    per_pass = run.event_writes / run.passes if run.passes else 0.0
    waiting_per_pass = run.waiting_writes / run.passes if run.passes else 0.0
    return (
        f"{name:<4} {run.seconds:7.1f} {run.passes:7d} {run.waited:7d} {run.event_writes:7d} "
        f"{per_pass:9.3f} {run.waiting_events:7d} {run.waiting_occurrences:8d} "
        f"{run.waiting_writes:8d} {waiting_per_pass:9.4f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--watch-delay", type=float, default=0.0)
    parser.add_argument("--settle", type=float, default=5.0)
    args = parser.parse_args()
    off = await measure(args.clusters, args.workers, False, args)
    on = await measure(args.clusters, args.workers, True, args)
    print(f"{args.clusters} RayClusters x {args.workers} workers, concurrency {args.concurrency}, "
          f"watch delay {args.watch_delay:g} s")  # fmt: skip
    print("flag  ready s  passes  waited  ev.wr  ev.wr/pass  Waiting  occurr.  W.writes  W.wr/pass")
    print(_row("off", off))
    print(_row("on", on))


if __name__ == "__main__":
    asyncio.run(main())
