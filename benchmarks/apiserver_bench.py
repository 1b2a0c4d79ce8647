"""Benchmark of the embedded API server over HTTP (not a test).

Starts ``rayop apiserver`` (plain HTTP) in a child process and drives it from this process:
pod creates/s with concurrency, gets/s, the time to list 1,000 pods, and watch fan-out
(10 watchers each receiving every pod creation). Run:

    .venv/bin/python benchmarks/apiserver_bench.py [--pods 5000] [--concurrency 64] [--kubelet]

Without ``--kubelet`` the simulated kubelet holds pods Pending (so only the API server is
measured); with it, every pod is also scheduled and run in the server process (3 more writes
per pod: binding with the Pending status, Running, Ready).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml


def _start_server(workdir: Path, kubelet: bool) -> tuple[subprocess.Popen[str], str, str]:
    kubeconfig = workdir / "kubeconfig.yaml"
    delays = (
        ["--pod-running-delay", "0.5", "--pod-ready-delay", "0.5"]
        if kubelet
        else ["--pod-pending-delay", "86400"]
    )
    prefix = os.environ.get("RAYOP_BENCH_SERVER_PREFIX", "").split()
    cmd = [
        sys.executable,
        *prefix,
        "-m",
        "rayop",
        "apiserver",
        "--no-tls",
        "--kubeconfig-out",
        str(kubeconfig),
        *delays,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    doc = yaml.safe_load(kubeconfig.read_text())
    return proc, doc["clusters"][0]["cluster"]["server"], doc["users"][0]["user"]["token"]


def _pod(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "bench", "ray.io/node-type": "worker"}},
            "spec": {
                "containers": [
                    {
                        "name": "ray-worker",
                        "image": "rayproject/ray:2.9.0",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    }
                ]
            },
        }
    )


async def _pool(n: int, concurrency: int, work: Any) -> float:
    """Runs work(i) for i in range(n) with bounded concurrency; returns the elapsed seconds."""
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await work(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


async def _create_namespace(http: aiohttp.ClientSession, url: str, name: str) -> None:
    body = orjson.dumps({"metadata": {"name": name}})
    async with http.post(f"{url}/api/v1/namespaces", data=body) as resp:
        assert resp.status == 201, await resp.text()


async def bench_creates_and_gets(
    http: aiohttp.ClientSession, url: str, pods: int, concurrency: int
) -> dict[str, float]:
    await _create_namespace(http, url, "bench")
    path = f"{url}/api/v1/namespaces/bench/pods"

    async def create(i: int) -> None:
        async with http.post(path, data=_pod(f"p-{i}")) as resp:
            await resp.read()
            assert resp.status == 201, resp.status

    elapsed = await _pool(pods, concurrency, create)
    rng = random.Random(1)

    async def get(_: int) -> None:
        async with http.get(f"{path}/p-{rng.randrange(pods)}") as resp:
            await resp.read()
            assert resp.status == 200

    get_elapsed = await _pool(pods, concurrency, get)
    return {"creates_per_s": pods / elapsed, "gets_per_s": pods / get_elapsed}


async def bench_list(http: aiohttp.ClientSession, url: str, concurrency: int) -> dict[str, float]:
    await _create_namespace(http, url, "list1000")
    path = f"{url}/api/v1/namespaces/list1000/pods"

    async def create(i: int) -> None:
        async with http.post(path, data=_pod(f"l-{i}")) as resp:
            await resp.read()

    await _pool(1000, concurrency, create)
    times = []
    for _ in range(7):
        start = time.perf_counter()
        async with http.get(path) as resp:
            body = orjson.loads(await resp.read())
        times.append(time.perf_counter() - start)
        assert len(body["items"]) == 1000
    return {"list_1000_ms_median": statistics.median(times) * 1000}


async def bench_watch_fanout(
    http: aiohttp.ClientSession, url: str, concurrency: int, watchers: int = 10, pods: int = 1000
) -> dict[str, float]:
    await _create_namespace(http, url, "fanout")
    path = f"{url}/api/v1/namespaces/fanout/pods"
    async with http.get(path) as resp:
        rv = orjson.loads(await resp.read())["metadata"]["resourceVersion"]
    done_at: list[float] = []
    ready = asyncio.Event()
    opened = 0

    async def watch() -> None:
        nonlocal opened
        seen = 0
        async with http.get(
            path,
            params={"watch": "1", "resourceVersion": rv},
            timeout=aiohttp.ClientTimeout(total=None),
        ) as resp:
            opened += 1
            if opened == watchers:
                ready.set()
            async for line in resp.content:
                if orjson.loads(line)["type"] == "ADDED":
                    seen += 1
                    if seen == pods:
                        done_at.append(time.perf_counter())
                        return

    tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
    await ready.wait()

    async def create(i: int) -> None:
        async with http.post(path, data=_pod(f"f-{i}")) as resp:
            await resp.read()

    start = time.perf_counter()
    await _pool(pods, concurrency, create)
    created = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*tasks), 120)
    last = max(done_at)
    return {
        "fanout_events_per_s": watchers * pods / (last - start),
        "fanout_lag_after_last_create_ms": (last - created) * 1000,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--kubelet", action="store_true", help="let the kubelet run the pods")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, token = _start_server(Path(tmp), args.kubelet)
        try:
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            connector = aiohttp.TCPConnector(limit=args.concurrency + 20)
            async with aiohttp.ClientSession(headers=headers, connector=connector) as http:
                results: dict[str, float] = {}
                results |= await bench_creates_and_gets(http, url, args.pods, args.concurrency)
                results |= await bench_list(http, url, args.concurrency)
                results |= await bench_watch_fanout(http, url, args.concurrency)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    mode = "kubelet running pods" if args.kubelet else "pods held Pending"
    print(
        f"apiserver benchmark ({mode}; {args.pods} pods, concurrency {args.concurrency}, "
        f"{os.cpu_count()} cpus)"
    )
    for key, value in results.items():
        print(f"  {key:34s} {value:10.1f}")


if __name__ == "__main__":
    asyncio.run(main())
