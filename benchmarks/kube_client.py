"""Benchmark of rayop's KubeClient against the embedded control plane (not a timed test).

Run: .venv/bin/python benchmarks/kube_client.py [--n 2000] [--concurrency 32]
Reports creates/s, gets/s (sequential and concurrent), the time of a paginated list of all
objects, and the time to receive N watch events.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import CONFIGMAPS
from rayop.sim.controlplane import EmbeddedControlPlane

NS = "default"


async def run(n: int, concurrency: int) -> None:
    async with EmbeddedControlPlane() as plane:
        config = await load_config(kubeconfig=plane.kubeconfig_path)
        async with KubeClient(config, qps=-1) as kube:
            sem = asyncio.Semaphore(concurrency)

            async def create(i: int) -> None:
                async with sem:
                    await kube.create(
                        CONFIGMAPS,
                        {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}},
                        namespace=NS,
                    )

            async def get(i: int) -> None:
                async with sem:
                    await kube.get(CONFIGMAPS, f"cm-{i}", namespace=NS)

            listed = await kube.list(CONFIGMAPS, namespace=NS, limit=1)
            rv = listed["metadata"]["resourceVersion"]
            received = 0
            done = asyncio.Event()

            async def watcher() -> None:
                nonlocal received
                async with kube.watch(CONFIGMAPS, namespace=NS, resource_version=rv) as events:
                    async for ev in events:
                        if ev.type == "ADDED":
                            received += 1
                            if received == n:
                                done.set()
                                return

            watch_task = asyncio.create_task(watcher())
            t = time.perf_counter()
            await asyncio.gather(*(create(i) for i in range(n)))
            create_s = time.perf_counter() - t
            await asyncio.wait_for(done.wait(), 60)
            watch_s = time.perf_counter() - t
            await watch_task

            t = time.perf_counter()
            for i in range(min(n, 500)):
                await kube.get(CONFIGMAPS, f"cm-{i}", namespace=NS)
            seq_get_s = (time.perf_counter() - t) / min(n, 500)

            t = time.perf_counter()
            await asyncio.gather(*(get(i) for i in range(n)))
            get_s = time.perf_counter() - t

            t = time.perf_counter()
            full = await kube.list(CONFIGMAPS, namespace=NS, limit=500)
            list_s = time.perf_counter() - t
            assert len(full["items"]) == n

    print(f"objects: {n}, concurrency: {concurrency}")
    print(f"creates/s (concurrent): {n / create_s:,.0f}")
    print(f"gets/s (concurrent):    {n / get_s:,.0f}")
    print(f"get latency (sequential): {seq_get_s * 1000:.2f} ms")
    print(f"list of {n} in pages of 500: {list_s * 1000:.0f} ms")
    print(f"all {n} ADDED watch events received {watch_s:.2f} s after the first create")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    asyncio.run(run(args.n, args.concurrency))


if __name__ == "__main__":
    main()
