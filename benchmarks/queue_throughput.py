"""Measures add+get+done throughput of the classic and the priority workqueue.

100,000 items over 1,000 keys: the producer adds every key once per round (100 rounds) and waits
until the workers have finished the round, so every add is processed (no deduplication). With
``--yield-per-item`` each worker also yields to the event loop once per item, as a reconcile that
awaits anything would, which makes the workers interleave.

Run: ``.venv/bin/python benchmarks/queue_throughput.py [--items N] [--keys K] [--yield-per-item]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import Callable
from typing import Protocol

from rayop.runtime.queues.priority import PriorityQueue
from rayop.runtime.queues.ratelimiting import RateLimitingQueue


class _Queue(Protocol):
    def add(self, item: int) -> None: ...

    async def get(self) -> tuple[int, bool]: ...

    def done(self, item: int) -> None: ...

    def shut_down(self) -> None: ...


async def _run(
    queue: _Queue, *, items: int, keys: int, workers: int, yield_per_item: bool
) -> float:
    processed = 0
    target = 0
    round_done = asyncio.Event()

    async def worker() -> None:
        nonlocal processed
        while True:
            item, shutdown = await queue.get()
            if shutdown:
                return
            if yield_per_item:
                await asyncio.sleep(0)
            queue.done(item)
            processed += 1
            if processed == target:
                round_done.set()

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    await asyncio.sleep(0)
    start = time.perf_counter()
    rounds = items // keys
    for _ in range(rounds):
        target += keys
        round_done.clear()
        for key in range(keys):
            queue.add(key)
        await round_done.wait()
    elapsed = time.perf_counter() - start
    queue.shut_down()
    await asyncio.gather(*tasks)
    assert processed == rounds * keys
    return rounds * keys / elapsed


def main() -> None:
    """Runs the benchmark for both queues and 1, 2 and 8 workers and prints items per second."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--yield-per-item", action="store_true")
    args = parser.parse_args()
    factories: dict[str, Callable[[], _Queue]] = {
        "classic (RateLimitingQueue)": lambda: RateLimitingQueue[int](),
        "priority (PriorityQueue)": lambda: PriorityQueue[int](),
    }
    print(f"{args.items} items over {args.keys} keys, yield_per_item={args.yield_per_item}")
    for label, factory in factories.items():
        for workers in (1, 2, 8):
            best = 0.0
            for _ in range(args.repeat):
                gc.collect()
                rate = asyncio.run(
                    _run(
                        factory(),
                        items=args.items,
                        keys=args.keys,
                        workers=workers,
                        yield_per_item=args.yield_per_item,
                    )
                )
                best = max(best, rate)
            print(f"{label:30s} workers={workers}: {best:12,.0f} items/s")


if __name__ == "__main__":
    main()
