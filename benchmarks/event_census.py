"""Benchmark: the Events rayop leaves after N RayClusters converge, by reason (not a test).

Runs the operator (RayCluster controller, concurrency 1) on an embedded control plane, creates
N RayClusters of W workers, waits until all are ready, and prints per reason the Event objects
stored and the occurrences they stand for (``series.count``, or 1). Put a checkout's ``src``
first on ``PYTHONPATH`` to measure it::

    PYTHONPATH=src .venv/bin/python benchmarks/event_census.py 100 3
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

from rayop.bench.scenarios import raycluster
from rayop.kube.resources import RAY_CLUSTERS as RAYCLUSTERS
from rayop.testing import eventually, open_control_plane, open_operator

NAMESPACE = "census"


async def census(clusters: int, workers: int) -> None:
    """Prints the Events by reason once ``clusters`` RayClusters are ready."""
    async with open_control_plane() as plane, open_operator(plane, concurrency=1, ready_timeout=60):
        for i in range(clusters):
            body = raycluster(f"rc{i}", workers, namespace=NAMESPACE)
            await plane.create(RAYCLUSTERS, body, NAMESPACE)

        def converged() -> bool:
            return all(plane.raycluster_converged(NAMESPACE, f"rc{i}") for i in range(clusters))

        await eventually(converged, timeout=900, what="every RayCluster ready")
        await asyncio.sleep(3)  # the last event writes
        objects: Counter[str] = Counter()
        occurrences: Counter[str] = Counter()
        for event in plane.events(NAMESPACE):
            objects[event["reason"]] += 1
            occurrences[event["reason"]] += int((event.get("series") or {}).get("count") or 1)
    print("reason: Event objects / occurrences")
    for reason in sorted(objects):
        print(f"  {reason}: {objects[reason]} / {occurrences[reason]}")
    print(f"total: {sum(objects.values())} / {sum(occurrences.values())}")


if __name__ == "__main__":
    asyncio.run(census(int(sys.argv[1]), int(sys.argv[2])))
