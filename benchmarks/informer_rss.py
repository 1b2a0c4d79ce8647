"""Measures the operator process's RSS with 10,000 KubeRay-like pods in the informer cache.

The embedded control plane runs in a child process (so its own copy of the pods is not counted);
this process lists+watches the pods through the real client into a SharedInformer, then reports
its resident set size. Target: under 150 MB for the whole process.

Run: .venv/bin/python benchmarks/informer_rss.py [--pods 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resources import PODS
from rayop.runtime.informer_factory import KUBERAY_CACHE_CONFIG, InformerFactory

SERVER = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[2])
from kuberay_pods import kuberay_worker_pod
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.kubelet import KubeletConfig

async def main() -> None:
    async with EmbeddedControlPlane(kubelet=KubeletConfig(pending_delay=3600.0)) as cp:
        info = cp.store.resources.get("", "v1", "pods")
        for i in range(int(sys.argv[1])):
            pod = kuberay_worker_pod(f"c{i // 100}", i)
            del pod["metadata"]["ownerReferences"]  # no RayCluster exists: keep the GC away
            await cp.store.create(info, "default", pod, copy=False)
        print(json.dumps({"url": cp.url, "token": cp.token}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 1e6


async def measure(url: str, token: str, expected: int) -> None:
    baseline = rss_mb()
    async with KubeClient(KubeConfig.for_server(url, token=token), qps=-1) as client:
        factory = InformerFactory(client, config=KUBERAY_CACHE_CONFIG)
        informer = factory.informer(PODS)
        started = time.perf_counter()
        factory.start()
        assert await factory.wait_for_sync(300)
        synced = time.perf_counter() - started
        gc.collect()
        print(f"pods cached:            {len(informer.list())} (expected {expected})")
        print(f"sync time:              {synced:.2f} s")
        print(f"RSS before informers:   {baseline:.1f} MB")
        print(f"RSS with pods cached:   {rss_mb():.1f} MB  (target < 150 MB)")
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        print(f"RSS after malloc_trim:  {rss_mb():.1f} MB")
        await factory.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    helpers = Path(__file__).resolve().parents[1] / "tests" / "runtime"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.pods), str(helpers)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert server.stdout is not None
        endpoint = json.loads(server.stdout.readline())
        asyncio.run(measure(endpoint["url"], endpoint["token"], args.pods))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
