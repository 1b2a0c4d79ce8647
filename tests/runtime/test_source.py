"""Informer sources: which requests they enqueue, at which priority, and when they are synced."""

from __future__ import annotations

from typing import Any

from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.runtime.controller import Controller
from rayop.runtime.informers.indexer import Obj
from rayop.runtime.informers.shared_informer import EventHandlerFuncs, SharedInformer
from rayop.runtime.informers.sources import LOW_PRIORITY, for_, owns
from rayop.runtime.predicate import generation_changed
from rayop.runtime.reconcile import Request, Result
from rayop.testing import eventually
from rayop.testing.clock import FakeClock

from .informer_fakes import FakeApi, pod


def cluster(name: str, generation: int = 1, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "default", "generation": generation, "uid": f"uid-{name}"}, **extra}


def worker(name: str, owner: str, *, controller: bool = True, kind: str = "RayCluster",
           api_version: str = "ray.io/v1") -> dict[str, Any]:
    ref = {"apiVersion": api_version, "kind": kind, "name": owner, "uid": f"uid-{owner}", "controller": controller}
    return pod(name, ownerReferences=[ref])


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Request, int | None]] = []

    def __call__(self, request: Request, priority: int | None = None) -> None:
        self.calls.append((request, priority))


async def test_for_enqueues_the_object_with_low_priority_for_initial_list_and_resync() -> None:
    api = FakeApi()
    api.put(cluster("c1"))
    clock = FakeClock()
    informer = SharedInformer(api, RAY_CLUSTERS, resync_period=60, clock=clock)
    source = for_(informer, generation_changed)
    enqueue = Recorder()
    source.start(enqueue)  # starts the informer too
    try:
        assert not source.has_synced()
        await eventually(source.has_synced)
        assert enqueue.calls == [(Request("default", "c1"), LOW_PRIORITY)]
        api.put(cluster("c1", status={"state": "ready"}))  # same generation: filtered out
        api.put(cluster("c1", generation=2))
        api.put(cluster("c2"))
        await eventually(lambda: len(enqueue.calls) == 3)
        assert enqueue.calls[1:] == [(Request("default", "c1"), 0), (Request("default", "c2"), 0)]
        enqueue.calls.clear()
        resyncs: list[Obj] = []
        informer.add_event_handler(EventHandlerFuncs(update=lambda old, new: resyncs.append(new)))
        await eventually(clock.has_sleepers)
        clock.step(60)  # a resync passes the predicate only if the generation changed: it does not
        await eventually(lambda: len(resyncs) == 2)
        assert enqueue.calls == []
    finally:
        await informer.stop()


async def test_resync_gets_low_priority_without_predicates() -> None:
    api = FakeApi()
    api.put(cluster("c1"))
    clock = FakeClock()
    informer = SharedInformer(api, RAY_CLUSTERS, resync_period=60, clock=clock)
    source = for_(informer)
    enqueue = Recorder()
    source.start(enqueue)
    try:
        await eventually(source.has_synced)
        await eventually(clock.has_sleepers)
        enqueue.calls.clear()
        clock.step(60)
        await eventually(lambda: len(enqueue.calls) == 1)
        assert enqueue.calls == [(Request("default", "c1"), LOW_PRIORITY)]
    finally:
        await informer.stop()


async def test_owns_enqueues_only_the_matching_controlling_owner() -> None:
    api = FakeApi()
    api.put(worker("p1", "c1"))
    api.put(worker("p2", "c2", controller=False))
    api.put(worker("p3", "c3", kind="RayJob"))
    api.put(worker("p4", "c4", api_version="other.io/v1"))
    informer = SharedInformer(api, PODS)
    source = owns(informer, "RayCluster", "ray.io")
    enqueue = Recorder()
    source.start(enqueue)
    try:
        await eventually(source.has_synced)
        assert enqueue.calls == [(Request("default", "c1"), LOW_PRIORITY)]
        enqueue.calls.clear()
        api.put(worker("p1", "c9"))  # re-owned: both the old and the new owner are enqueued
        api.remove("default", "p1")
        await eventually(lambda: len(enqueue.calls) == 3)
        assert enqueue.calls == [
            (Request("default", "c1"), 0), (Request("default", "c9"), 0), (Request("default", "c9"), 0)
        ]
    finally:
        await informer.stop()


async def test_a_controller_reconciles_what_its_informer_sources_enqueue() -> None:
    cluster_api, pod_api = FakeApi(), FakeApi()
    cluster_api.put(cluster("c1"))
    pod_api.put(worker("p1", "c2"))
    clusters = SharedInformer(cluster_api, RAY_CLUSTERS)
    pods = SharedInformer(pod_api, PODS)
    seen: list[Request] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request)
        return Result()

    controller = Controller("raycluster", reconcile, sources=[for_(clusters), owns(pods, "RayCluster", "ray.io")])
    await controller.start()
    try:
        await eventually(lambda: len(seen) == 2)
        assert sorted(r.name for r in seen) == ["c1", "c2"]
        pod_api.put(worker("p2", "c3"))
        await eventually(lambda: len(seen) == 3)
        assert seen[-1] == Request("default", "c3")
    finally:
        await controller.stop()
        await clusters.stop()
        await pods.stop()
