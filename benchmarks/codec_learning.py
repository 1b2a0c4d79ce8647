"""How well the informers' compact stores learn their dictionaries, under a learning rule (not a test).

Records the watch events of RayClusters, their pods and Services while rayop makes them ready
on the embedded control plane (in process), then replays those events into informer stores
(:class:`~rayop.runtime.informers.indexer.Indexer`, ``managedFields`` dropped as the operator's
caches drop them) whose codec learns by each rule given, and prints each store's average
compact bytes per object and its dictionary generations. Stores that keep few decoded objects
(``--decoded 8``) encode early versions of each object, as a busy operator's stores do when
thousands of objects change at once; a replay started at other points of the record (``--starts``)
gives the stores other first objects to learn from.

Run::

    PYTHONPATH=src .venv/bin/python benchmarks/codec_learning.py --clusters 300 \\
        --decoded 8,64 --rules 0.08:256,0.055:128 [--events events.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path
from typing import Any

import orjson
from sharded_scale import NAMESPACE, raycluster

from rayop.kube.errors import AlreadyExists
from rayop.kube.resource import Resource
from rayop.kube.resources import NAMESPACES, PODS, RAY_CLUSTERS, SERVICES
from rayop.runtime.informers.compact_store import ObjectCodec
from rayop.runtime.informers.indexer import Indexer, object_key
from rayop.testing.control_plane import open_control_plane
from rayop.testing.operator import open_operator

STORES = {"pods": PODS, "rayclusters": RAY_CLUSTERS, "services": SERVICES}

Event = tuple[str, str, dict[str, Any]]
"""(store, watch event type, object)."""


async def record(clusters: int, workers: int) -> list[Event]:
    """The watch events of ``clusters`` RayClusters made ready by rayop (c=1)."""
    events: list[Event] = []
    async with open_control_plane() as plane:
        user = plane.client
        with contextlib.suppress(AlreadyExists):
            await user.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": NAMESPACE}})  # fmt: skip
        async with open_operator(plane, concurrency=1):

            async def watch(store: str, resource: Resource) -> None:
                async with user.watch(resource, namespace=NAMESPACE) as stream:
                    async for event in stream:
                        events.append((store, event.type, dict(event.object)))

            tasks = [asyncio.create_task(watch(s, r)) for s, r in STORES.items()]
            for i in range(clusters):
                await user.create(RAY_CLUSTERS, raycluster(f"c{i:05d}", workers), namespace=NAMESPACE)
            for _ in range(1200):
                await asyncio.sleep(1)
                listed = (await user.list(RAY_CLUSTERS, namespace=NAMESPACE))["items"]
                if sum((o.get("status") or {}).get("state") == "ready" for o in listed) == clusters:
                    break
            await asyncio.sleep(2)
            for task in tasks:
                task.cancel()
    return events


def replay(events: list[Event], ratio: float, min_bytes: int, decoded: int, start: int) -> dict[str, tuple[int, float, int]]:
    """Per store: (objects, average compact bytes, dictionary generations) after the replay."""

    stores = {name: Indexer(decoded_cache_size=decoded) for name in STORES}
    for indexer in stores.values():  # each store's codec, learning by the rule under test
        indexer._codec = ObjectCodec(learn_ratio=ratio, learn_min_bytes=min_bytes)
    for store, kind, obj in events[start:] + events[:start]:
        if kind == "DELETED":
            stores[store].remove(object_key(obj))
        elif kind in ("ADDED", "MODIFIED"):
            meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
            stores[store].put({**obj, "metadata": meta})
    return {
        name: (len(s), s.stored_bytes() / max(1, len(s)), s.dictionary_generations)
        for name, s in stores.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=300)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--decoded", default="8,64", help="decoded objects kept per store")
    parser.add_argument("--rules", default="0.08:256,0.055:128", help="ratio:min_bytes,...")
    parser.add_argument("--starts", type=int, default=5, help="replay starting points")
    parser.add_argument("--events", type=Path, help="read (or write, if absent) the record here")
    args = parser.parse_args()
    if args.events is not None and args.events.exists():
        events: list[Event] = [(s, k, o) for s, k, o in orjson.loads(args.events.read_bytes())]
    else:
        events = asyncio.run(record(args.clusters, args.workers))
        if args.events is not None:
            args.events.write_bytes(orjson.dumps(events))
    print(f"{len(events)} watch events")
    for decoded in (int(d) for d in args.decoded.split(",")):
        for rule in args.rules.split(","):
            ratio, min_bytes = rule.split(":")
            for k in range(args.starts):
                start = k * len(events) // args.starts
                found = replay(events, float(ratio), int(min_bytes), decoded, start)
                print(f"decoded {decoded:3d} rule {ratio}:{min_bytes} start {start:5d}  " + "  ".join(
                    f"{name} {n} x {avg:4.0f} B ({gen} dict.)" for name, (n, avg, gen) in found.items()
                ))  # fmt: skip


if __name__ == "__main__":
    main()
