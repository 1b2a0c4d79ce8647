"""Shared informer, cache and factory behaviour against an in-memory list/watch fake."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any, cast

import orjson
import pytest

from rayop.controllers.config.cache_config import KUBERAY_CACHE_CONFIG
from rayop.kube.resources import JOBS, PODS
from rayop.runtime.informers.factory import CacheConfig, InformerFactory
from rayop.runtime.informers.indexer import OWNER_UID_INDEX, Obj
from rayop.runtime.informers.shared_informer import EventHandlerFuncs, SharedInformer
from rayop.testing import eventually
from rayop.testing.clock import FakeClock

from .informer_fakes import FakeApi, pod


@contextlib.asynccontextmanager
async def running(informer: SharedInformer) -> AsyncIterator[SharedInformer]:
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        yield informer
    finally:
        await informer.stop()


def owned(name: str, owner_uid: str, **labels: str) -> dict[str, Any]:
    ref = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "c", "uid": owner_uid, "controller": True}
    return pod(name, ownerReferences=[ref], labels=labels)


async def test_handlers_run_after_the_cache_is_updated_in_order() -> None:
    api = FakeApi()
    api.put(pod("a"))
    informer = SharedInformer(api, PODS)
    seen: list[tuple[str, str, bool]] = []

    def on_add(obj: Obj, initial: bool) -> None:
        name = obj["metadata"]["name"]
        assert informer.get("default", name) is obj  # the cache already holds it
        seen.append(("add", name, initial))

    def on_update(old: Obj, new: Obj) -> None:
        assert informer.get("default", new["metadata"]["name"]) is new
        seen.append(("update", new["metadata"]["labels"]["v"], False))

    def on_delete(obj: Obj) -> None:
        assert informer.get("default", obj["metadata"]["name"]) is None
        seen.append(("delete", obj["metadata"]["name"], False))

    registration = informer.add_event_handler(EventHandlerFuncs(on_add, on_update, on_delete))
    assert not registration.has_synced()
    async with running(informer):
        assert registration.has_synced()
        api.put(pod("b"))
        api.put(pod("b", labels={"v": "1"}))
        api.put(pod("b", labels={"v": "2"}))
        api.remove("default", "b")
        await eventually(lambda: len(seen) == 5)
    assert seen == [
        ("add", "a", True),
        ("add", "b", False),
        ("update", "1", False),
        ("update", "2", False),
        ("delete", "b", False),
    ]


async def test_a_late_handler_gets_the_cache_as_initial_adds() -> None:
    api = FakeApi()
    api.put(pod("a"))
    api.put(pod("b"))
    async with running(SharedInformer(api, PODS)) as informer:
        adds: list[tuple[str, bool]] = []
        registration = informer.add_event_handler(
            EventHandlerFuncs(add=lambda o, initial: adds.append((o["metadata"]["name"], initial)))
        )
        assert registration.has_synced()
        assert sorted(adds) == [("a", True), ("b", True)]


async def test_cached_objects_are_read_only_and_deep_copies_are_mutable() -> None:
    api = FakeApi()
    api.put(owned("a", "u1", app="x"))
    async with running(SharedInformer(api, PODS)) as informer:
        obj = informer.get("default", "a")
        assert obj is not None
        with pytest.raises(TypeError):
            obj["metadata"]["labels"]["app"] = "y"
        with pytest.raises(TypeError):
            obj["metadata"]["ownerReferences"].append({})
        with pytest.raises(TypeError):
            obj["metadata"].pop("name")
        # A deep copy of a cached (frozen) object is a plain, mutable dict.
        mine = cast("dict[str, Any]", copy.deepcopy(obj))
        mine["metadata"]["labels"]["app"] = "y"
        mine["metadata"]["ownerReferences"].append({})
        assert informer.get("default", "a")["metadata"]["labels"]["app"] == "x"  # type: ignore[index]
        assert isinstance(obj, dict)
        assert orjson.loads(orjson.dumps(obj)) == json.loads(json.dumps(obj)) == mine | {
            "metadata": {**mine["metadata"], "labels": {"app": "x"}, "ownerReferences": mine["metadata"]["ownerReferences"][:1]}
        }


async def test_indexes_and_selectors() -> None:
    api = FakeApi()
    api.put(owned("a", "u1", group="g1"))
    api.put(owned("b", "u1", group="g2"))
    api.put(owned("c", "u2", group="g1"))
    api.put(pod("d", namespace="other"))
    informer = SharedInformer(
        api, PODS, indexers={"group": lambda o: [o["metadata"].get("labels", {}).get("group", "")]}
    )
    async with running(informer):

        def names(objs: Iterable[Obj]) -> list[str]:
            return sorted(o["metadata"]["name"] for o in objs)

        assert names(informer.by_index(OWNER_UID_INDEX, "u1")) == ["a", "b"]
        assert names(informer.by_index("group", "g1")) == ["a", "c"]
        assert names(informer.list("other")) == ["d"]
        assert names(informer.list()) == ["a", "b", "c", "d"]
        assert names(informer.list("default", label_selector="group in (g2,g3)")) == ["b"]
        assert names(informer.list(label_selector={"group": "g1"})) == ["a", "c"]
        # An update re-files the object; a delete unfiles it.
        api.put(owned("a", "u2", group="g1"))
        api.remove("default", "c")
        await eventually(lambda: names(informer.by_index(OWNER_UID_INDEX, "u2")) == ["a"])
        assert names(informer.by_index(OWNER_UID_INDEX, "u1")) == ["b"]
        assert names(informer.by_index("group", "g1")) == ["a"]


async def test_resync_redelivers_cached_objects_as_updates_without_contacting_the_server() -> None:
    api = FakeApi()
    api.put(pod("a"))
    clock = FakeClock()
    informer = SharedInformer(api, PODS, resync_period=30.0, clock=clock)
    updates: list[tuple[Obj, Obj]] = []
    informer.add_event_handler(EventHandlerFuncs(update=lambda o, n: updates.append((o, n))))
    async with running(informer):
        await eventually(clock.has_sleepers)
        clock.step(30)
        await eventually(lambda: len(updates) == 1)
        old, new = updates[0]
        assert old is new
        assert len(api.list_calls) == 1


@pytest.mark.looptime
async def test_relist_after_gone_reports_the_differences() -> None:
    api = FakeApi()
    api.put(pod("a"))
    api.put(pod("b"))
    events: list[tuple[str, str]] = []
    informer = SharedInformer(api, PODS)
    informer.add_event_handler(
        EventHandlerFuncs(
            add=lambda o, i: events.append(("add", o["metadata"]["name"])),
            update=lambda o, n: events.append(("update", n["metadata"]["name"])),
            delete=lambda o: events.append(("delete", o["metadata"]["name"])),
        )
    )
    async with running(informer):
        events.clear()
        api.drop_after_events = 0
        api.end_watches()
        api.put(pod("a", labels={"x": "1"}))
        api.remove("default", "b")
        api.put(pod("c"))
        api.compact()
        api.drop_after_events = None
        await eventually(lambda: len(events) == 3)
    assert sorted(events) == [("add", "c"), ("delete", "b"), ("update", "a")]


async def test_factory_shares_informers_and_applies_kuberay_filters() -> None:
    api = FakeApi()
    api.put(pod("head", labels={"ray.io/node-type": "head"}))
    api.put(pod("user-pod", labels={"app": "web"}))
    factory = InformerFactory(api, config=KUBERAY_CACHE_CONFIG)
    pods = factory.informer(PODS)
    assert factory.informer(PODS) is pods
    assert isinstance(pods, SharedInformer)
    assert pods.label_selector == "ray.io/node-type in (head,worker,redis-cleanup)"
    assert factory.informer(JOBS).label_selector == "app.kubernetes.io/created-by=kuberay-operator"  # type: ignore[union-attr]
    factory.start()
    try:
        assert await factory.wait_for_sync(5)
        assert [o["metadata"]["name"] for o in pods.list()] == ["head"]
    finally:
        await factory.stop()


async def test_factory_filters_nothing_by_default() -> None:
    api = FakeApi()
    api.put(pod("head", labels={"ray.io/node-type": "head"}))
    api.put(pod("user-pod", labels={"app": "web"}))
    factory = InformerFactory(api)
    pods = factory.informer(PODS)
    assert isinstance(pods, SharedInformer) and pods.label_selector is None
    factory.start()
    try:
        assert await factory.wait_for_sync(5)
        assert sorted(o["metadata"]["name"] for o in pods.list()) == ["head", "user-pod"]
    finally:
        await factory.stop()


async def test_factory_with_several_namespaces_merges_them() -> None:
    api = FakeApi()
    api.put(pod("a", namespace="n1"))
    api.put(pod("b", namespace="n2"))
    api.put(pod("c", namespace="n3"))
    factory = InformerFactory(api, namespaces=["n1", "n2"], config=CacheConfig())
    informer = factory.informer(PODS)
    factory.start()
    try:
        assert await factory.wait_for_sync(5)
        assert sorted(o["metadata"]["name"] for o in informer.list()) == ["a", "b"]
        assert informer.get("n2", "b") is not None
        assert informer.get("n3", "c") is None
    finally:
        await factory.stop()
