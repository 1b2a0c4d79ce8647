"""Measures what the account of decisions (``rayop.runtime.decisions``) costs per pass.

One :class:`~rayop.runtime.controller.Controller` with one worker runs passes over ``--keys``
objects, round after round, once without a decision log and once with one, alternating the two
``--repeats`` times in one process so that both sides see the same machine load. Each pass is
what the controller loop costs with a reconcile that either does nothing (``quiet``: the account
is folded into the last one) or notes what a pass that creates a pod notes (``acting``: a wait,
a write, an Event). Prints the best and the median microseconds per pass of each side and their
difference, and the memory the log holds per object once every object's rings are full.

Run: ``.venv/bin/python benchmarks/decisions_overhead.py [--keys N] [--rounds R] [--repeats K]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc

from rayop.runtime.controller import Controller, ReconcileFunc, Request, Result
from rayop.runtime.decisions import DecisionLog, PassAccount, note_event, note_wait, note_write
from rayop.runtime.source import Enqueue


class _Synced:
    def start(self, enqueue: Enqueue) -> None:
        pass

    def has_synced(self) -> bool:
        return True


async def _quiet(_request: Request) -> Result:
    return Result(requeue_after=300.0)


async def _acting(request: Request) -> Result:
    note_wait(f"expectations of group 'workers' not met: pod {request.name}-x")
    note_write(f"POST /api/v1/namespaces/{request.namespace}/pods/{request.name}-head: ok")
    note_event(f"Normal CreatedHeadPod: Created head Pod {request.namespace}/{request.name}")
    return Result(requeue_after=2.0)


async def _passes_per_second(
    reconcile: ReconcileFunc, log: DecisionLog | None, keys: int, rounds: int
) -> float:
    """Returns microseconds per pass over ``rounds`` rounds of ``keys`` keys."""
    done = 0
    target = 0
    round_done = asyncio.Event()

    async def counted(request: Request) -> Result:
        nonlocal done
        result = await reconcile(request)
        done += 1
        if done == target:
            round_done.set()
        return result

    controller = Controller("bench", counted, sources=[_Synced()], decisions=log, kind="Thing")
    await controller.start()
    requests = [Request("ns", f"object-{i}") for i in range(keys)]
    gc.collect()
    start = time.perf_counter()
    for _ in range(rounds):
        target += keys
        round_done.clear()
        for request in requests:
            controller.enqueue(request)
        await round_done.wait()
    elapsed = time.perf_counter() - start
    await controller.stop(graceful=False)
    return elapsed / (keys * rounds) * 1e6


def _bytes_per_object(keys: int) -> float:
    """Returns the bytes a full log holds per object (acting passes: the bigger ones)."""
    log = DecisionLog()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]

    async def fill() -> None:
        controller = Controller("bench", _acting, sources=[_Synced()], decisions=log, kind="K")
        await controller.start()
        for _ in range(log.per_object + log.acted + 1):
            for i in range(keys):
                controller.enqueue(Request("ns", f"object-{i}"))
            while len(controller.queue):
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
        await controller.stop(graceful=False)

    asyncio.run(fill())
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(log) == keys
    return held / keys


def _account_cost(notes: int, keys: int, n: int = 200_000) -> float:
    """Returns the microseconds one pass's account costs alone: open, ``notes`` notes, settle,
    close, into a log already holding ``keys`` objects (the texts are made beforehand)."""
    log = DecisionLog()
    result = Result(requeue_after=2.0)
    texts = [f"POST /api/v1/namespaces/ns/pods/object-{i}-head: ok" for i in range(notes)]
    accounts = [PassAccount("bench", "K", "ns", f"object-{i % keys}", 0.0) for i in range(n)]
    gc.collect()
    start = time.perf_counter()
    for account in accounts:
        token = log.open(account)
        for text in texts:
            note_write(text)
        account.settle(result, None, 0.001)
        log.close(account, token)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for label, reconcile in (("quiet", _quiet), ("acting", _acting)):
        without: list[float] = []
        with_log: list[float] = []
        for _ in range(args.repeats):
            without.append(asyncio.run(_passes_per_second(reconcile, None, args.keys, args.rounds)))
            with_log.append(
                asyncio.run(_passes_per_second(reconcile, DecisionLog(), args.keys, args.rounds))
            )
        off, on = statistics.median(without), statistics.median(with_log)
        print(
            f"{label:7s} pass: without log {off:6.2f} us (best {min(without):6.2f}), "
            f"with log {on:6.2f} us (best {min(with_log):6.2f}); "
            f"difference {on - off:+.2f} us per pass ({(on / off - 1) * 100:+.1f} %)"
        )
    for notes in (0, 3):
        cost = min(_account_cost(notes, args.keys) for _ in range(args.repeats))
        print(f"the account alone, {notes} notes: {cost:.2f} us per pass (best of {args.repeats})")
    print(f"memory held per object (full rings, acting passes): {_bytes_per_object(500):.0f} B")


if __name__ == "__main__":
    main()
