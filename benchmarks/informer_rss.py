"""Measures the operator process's RSS with 10,000 KubeRay-like pods in the informer cache.

The embedded control plane runs in a child process (so its own copy of the pods is not counted);
this process lists+watches the pods through the real client into a SharedInformer, then reports
its resident set size. Target: under 150 MB for the whole process.

The pods are Running and Ready (IPs, conditions and container statuses set), as KubeRay's worker
pods look once started. They belong to RayClusters of 10 workers, each cluster in a namespace of its own (1,000
namespaces for 10,000 pods). The benchmark also times the reads a reconcile makes: ``get()`` of one
pod and ``list(namespace)`` of a cluster's 10 pods, both for objects not read recently (decoded
from the compact store) and for objects read just before (served from the decoded-object LRU).

Run: .venv/bin/python benchmarks/informer_rss.py [--pods 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import resource
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import orjson
import psutil

from rayop.controllers.config.cache_config import KUBERAY_CACHE_CONFIG
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resources import PODS
from rayop.runtime.informers.factory import InformerFactory
from rayop.runtime.informers.shared_informer import SharedInformer

SERVER = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[2])
from kuberay_pods import kuberay_worker_pod
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig

async def main() -> None:
    async with EmbeddedControlPlane(kubelet=KubeletConfig(pending_delay=3600.0)) as cp:
        info = cp.store.resources.get("", "v1", "pods")
        ns_info = cp.store.resources.get("", "v1", "namespaces")
        for i in range(int(sys.argv[1])):
            namespace = f"ns-{i // 10:04d}"
            if i % 10 == 0:
                ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                await cp.store.create(ns_info, None, ns)
            pod = kuberay_worker_pod(f"c{i // 10}", i, namespace=namespace)
            del pod["metadata"]["ownerReferences"]  # no RayCluster exists: keep the GC away
            status = pod.pop("status")
            made = await cp.store.create(info, namespace, pod, copy=False)
            # Running and Ready, with IPs and container statuses, as a kubelet would report.
            await cp.store.update(info, namespace, made["metadata"]["name"],
                                  {**made, "status": status}, subresource="status", copy=False)
        print(json.dumps({"url": cp.url, "token": cp.token}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 1e6


def micros(action: Callable[[], object], *, repeat: int = 200) -> float:
    """Returns the best time of one call of ``action`` in microseconds."""
    return min(timeit.repeat(action, number=1, repeat=repeat)) * 1e6


def read_costs(informer: SharedInformer, pods: int) -> None:
    """Prints the cost of the reads a reconcile makes, cold (decoded) and warm (LRU)."""
    namespaces = max(1, pods // 10)
    # Namespaces from ns-0002 on were listed early and are not read below: none is in the LRU.
    cold = iter(range(2, 10**9))

    def cold_get() -> object:
        n = next(cold) % namespaces
        return informer.get(f"ns-{n:04d}", f"raycluster-c{n}-workergroup-worker-{n * 10:05d}")

    def cold_list() -> object:
        return informer.list(f"ns-{next(cold) % namespaces:04d}")

    def warm_get() -> object:
        return informer.get("ns-0000", "raycluster-c0-workergroup-worker-00000")

    def warm_list() -> object:
        return informer.list("ns-0001")

    size = len(informer.list("ns-0001"))
    assert cold_get() is not None and warm_get() is not None
    print(f"get(), not read recently:           {micros(cold_get):8.1f} µs")
    print(f"get(), read just before (LRU):      {micros(warm_get):8.1f} µs")
    print(f"list(ns) of {size} pods, not read recently: {micros(cold_list):8.1f} µs")
    print(f"list(ns) of {size} pods, read just before:  {micros(warm_list):8.1f} µs")


async def measure(url: str, token: str, expected: int) -> None:
    gc.collect()
    baseline = rss_mb()
    async with KubeClient(KubeConfig.for_server(url, token=token), qps=-1) as client:
        factory = InformerFactory(client, config=KUBERAY_CACHE_CONFIG)
        informer = factory.informer(PODS)
        assert isinstance(informer, SharedInformer)
        started = time.perf_counter()
        factory.start()
        assert await factory.wait_for_sync(300)
        synced = time.perf_counter() - started
        gc.collect()
        cached = rss_mb()
        count = len(informer)
        print(f"pods cached:            {count} (expected {expected})")
        print(f"sync time:              {synced:.2f} s")
        print(f"RSS before informers:   {baseline:.1f} MB")
        print(f"RSS with pods cached:   {cached:.1f} MB  (target < 150 MB)")
        print(
            f"per cached pod:         {(cached - baseline) * 1e6 / max(1, count):.0f} bytes of RSS"
        )
        sample = informer.get("ns-0000", "raycluster-c0-workergroup-worker-00000")
        assert sample is not None and sample["status"]["phase"] == "Running"
        print(
            f"compact encoding:       {informer.stored_bytes() / max(1, count):.0f} bytes per pod "
            f"(JSON {len(orjson.dumps(sample))} bytes)"
        )
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        print(
            f"peak RSS so far:        {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6:.1f} MB"
        )
        print(f"RSS after malloc_trim:  {rss_mb():.1f} MB")
        read_costs(informer, expected)
        print(f"RSS after the reads:    {rss_mb():.1f} MB")
        await factory.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    helpers = Path(__file__).resolve().parents[1] / "tests" / "runtime"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.pods), str(helpers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
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
