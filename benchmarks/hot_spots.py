"""Benchmark: the three scale hot spots of issue 18, each alone (not a test).

- the event recorder's cost per event with N live series (it once scanned every series per
  event once 4,096 existed);
- the embedded plane's endpoints controller's CPU while N RayCluster-shaped groups (a head
  Service and 4 pods with IPs, one namespace) are created (it once scanned every Service per
  pod event and every pod of the namespace per sync);
- freezing a decoded KubeRay worker pod on a cache read.

CPU is process time, so other load on the machine matters less; compare two checkouts by
running this file with each one's ``src`` first on ``PYTHONPATH``::

    PYTHONPATH=src .venv/bin/python benchmarks/hot_spots.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
import timeit
from pathlib import Path
from typing import Any

import orjson

from rayop.runtime.events.recorder import EventRecorder
from rayop.sim.controller_manager.endpoints import EndpointsController
from rayop.sim.storage.store import Store

_PODS = Path(__file__).resolve().parents[1] / "tests" / "runtime" / "kuberay_pods.py"


def kuberay_worker_pod(cluster: str, index: int) -> dict[str, Any]:
    """Returns the worker pod KubeRay v1.7.0 builds (the tests' fixture of it)."""
    spec = importlib.util.spec_from_file_location("kuberay_pods", _PODS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pod: dict[str, Any] = module.kuberay_worker_pod(cluster, index)
    return pod


class NullEventApi:
    """Answers every event write at once."""

    async def create(
        self, res: Any, obj: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        return obj

    async def patch(self, res: Any, name: str, body: Any, **options: Any) -> dict[str, Any]:
        return dict(body)


async def recorder_cost(series: int) -> float:
    """Returns the CPU microseconds of one event() call with ``series`` live series."""
    recorder = EventRecorder(NullEventApi(), reporting_controller="bench")
    refs = [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster",
         "metadata": {"name": f"c{i}", "namespace": "ns", "uid": f"u{i}", "resourceVersion": "1"}}
        for i in range(series)
    ]  # fmt: skip
    for ref in refs:
        recorder.event(ref, "Normal", "CreatedService", "created")
    await recorder.flush()
    start = time.process_time()
    for ref in refs:
        recorder.event(ref, "Normal", "CreatedHeadPod", "created head pod")
    elapsed = time.process_time() - start
    await recorder.close()
    return elapsed / series * 1e6


async def endpoints_cost(groups: int, *, controller: bool) -> float:
    """Returns the CPU seconds of creating ``groups`` Services with 4 pods each."""
    store = Store(seed=1)
    endpoints = EndpointsController(store)
    if controller:
        await endpoints.start()
    pods = store.resources.get("", "v1", "pods")
    services = store.resources.get("", "v1", "services")
    assert pods is not None and services is not None
    start = time.process_time()
    for i in range(groups):
        selector = {"ray.io/cluster": f"c{i}", "ray.io/node-type": "head"}
        await store.create(services, "default", {
            "metadata": {"name": f"c{i}-head"},
            "spec": {"selector": selector, "ports": [{"name": "gcs", "port": 6379}]},
        })  # fmt: skip
        for j in range(4):
            labels = {"ray.io/cluster": f"c{i}", "ray.io/node-type": "head" if j == 0 else "worker"}
            await store.create(pods, "default", {
                "metadata": {"name": f"c{i}-p{j}", "labels": labels},
                "spec": {"containers": [{"name": "ray", "image": "ray"}]},
                "status": {"podIP": f"10.{i // 250}.{i % 250}.{j}", "phase": "Running"},
            })  # fmt: skip
        await asyncio.sleep(0)
    for _ in range(200):
        await asyncio.sleep(0)
    elapsed = time.process_time() - start
    if controller:
        await endpoints.stop()
    return elapsed


def freeze_cost() -> tuple[int, float]:
    """Returns a worker pod's JSON size and the CPU microseconds of decoding it from the cache."""
    from rayop.runtime.informers.compact_store import ObjectCodec

    codec = ObjectCodec()
    pod = kuberay_worker_pod("c1", 3)
    blob = codec.encode(pod)
    runs = timeit.repeat(lambda: codec.decode(blob), number=2000, repeat=9, timer=time.process_time)
    return len(orjson.dumps(pod)), min(runs) / 2000 * 1e6


async def main() -> None:
    """Prints each figure."""
    for series in (1000, 5000, 10000):
        print(f"event recorder, {series} series: {await recorder_cost(series):.1f} us per event")
    for groups in (250, 500, 1000):
        base = await endpoints_cost(groups, controller=False)
        full = await endpoints_cost(groups, controller=True)
        print(f"endpoints controller, {groups} groups: {full - base:.2f} s CPU")
    size, micros = freeze_cost()
    print(f"cache read of a {size}-byte worker pod (inflate, parse, freeze): {micros:.1f} us")


if __name__ == "__main__":
    asyncio.run(main())
