"""The simulated garbage collector honours ownerReferences and the three propagation policies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.sim.controller_manager.garbage_collector import GarbageCollector
from rayop.sim.nodes.kubelet import Kubelet, KubeletConfig
from rayop.sim.storage.store import Store

from .sim_waiting import info, wait_for


def _owned(name: str, owner: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }
    return {"metadata": {"name": name, "ownerReferences": [ref]}, "data": {}}


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    store = Store(seed=5)
    gc = GarbageCollector(store)
    kubelet = Kubelet(store, KubeletConfig(running_delay=0.0, ready_delay=0.0, delete_delay=0.01))
    await gc.start()
    await kubelet.start()
    yield store
    await kubelet.stop()
    await gc.stop()


def _gone(obj: dict[str, Any] | None) -> bool:
    return obj is None


async def test_background_deletion_removes_dependents_transitively(store: Store) -> None:
    cms, pods = info(store, "", "configmaps"), info(store, "", "pods")
    owner = await store.create(cms, "default", {"metadata": {"name": "owner"}})
    child = await store.create(cms, "default", _owned("child", owner))
    pod = _owned("grandchild", child)
    pod["spec"] = {"containers": [{"name": "c", "image": "x"}]}
    del pod["data"]
    await store.create(pods, "default", pod)
    await store.delete(cms, "default", "owner")
    await wait_for(store, cms, "default", "child", _gone)
    await wait_for(store, pods, "default", "grandchild", _gone)


async def test_dependent_with_a_live_owner_keeps_it(store: Store) -> None:
    cms = info(store, "", "configmaps")
    a = await store.create(cms, "default", {"metadata": {"name": "a"}})
    b = await store.create(cms, "default", {"metadata": {"name": "b"}})
    both = _owned("both", a)
    both["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": b["metadata"]["uid"]}
    )
    await store.create(cms, "default", both)
    await store.delete(cms, "default", "a")
    left = await wait_for(
        store,
        cms,
        "default",
        "both",
        lambda o: o is not None and len(o["metadata"]["ownerReferences"]) == 1,
    )
    assert left is not None and left["metadata"]["ownerReferences"][0]["name"] == "b"


async def test_dependent_of_a_missing_owner_is_collected(store: Store) -> None:
    cms = info(store, "", "configmaps")
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-dead-beef-0000-000000000000"}}
    await store.create(cms, "default", _owned("stray", ghost))
    await wait_for(store, cms, "default", "stray", _gone)


async def test_foreground_waits_for_blocking_dependents(store: Store) -> None:
    cms = info(store, "", "configmaps")
    owner = await store.create(cms, "default", {"metadata": {"name": "fg"}})
    dep = _owned("blocker", owner, block=True)
    dep["metadata"]["finalizers"] = ["test/hold"]
    await store.create(cms, "default", dep)
    deleting = await store.delete(cms, "default", "fg", propagation_policy="Foreground")
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    blocker = await wait_for(
        store,
        cms,
        "default",
        "blocker",
        lambda o: bool(o and o["metadata"].get("deletionTimestamp")),
    )
    assert blocker is not None
    still = await store.get(cms, "default", "fg")
    assert still["metadata"]["deletionTimestamp"]
    blocker["metadata"]["finalizers"] = []
    await store.update(cms, "default", "blocker", blocker)
    await wait_for(store, cms, "default", "fg", _gone)


async def test_orphan_strips_owner_references(store: Store) -> None:
    cms = info(store, "", "configmaps")
    owner = await store.create(cms, "default", {"metadata": {"name": "parent"}})
    await store.create(cms, "default", _owned("kid", owner))
    await store.delete(cms, "default", "parent", propagation_policy="Orphan")
    await wait_for(store, cms, "default", "parent", _gone)
    kid = await store.get(cms, "default", "kid")
    assert not kid["metadata"].get("ownerReferences")


async def test_namespace_deletion_removes_its_objects(store: Store) -> None:
    namespaces, cms, pods = (
        info(store, "", "namespaces"),
        info(store, "", "configmaps"),
        info(store, "", "pods"),
    )
    await store.create(namespaces, None, {"metadata": {"name": "team"}})
    await store.create(cms, "team", {"metadata": {"name": "c"}})
    await store.create(
        pods,
        "team",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    )
    await wait_for(store, pods, "team", "p", lambda p: bool(p and p["spec"].get("nodeName")))
    await store.delete(namespaces, None, "team")
    await wait_for(store, namespaces, "", "team", _gone)
    assert store.list(cms, "team")[0] == [] and store.list(pods, "team")[0] == []


def _ref(owner: dict[str, Any], *, block: bool) -> dict[str, Any]:
    ref: dict[str, Any] = _owned("-", owner, block=block)["metadata"]["ownerReferences"][0]
    return ref


async def test_foreground_keeps_a_dependent_another_owner_still_holds(store: Store) -> None:
    cms = info(store, "", "configmaps")
    doomed = await store.create(cms, "default", {"metadata": {"name": "doomed"}})
    keeper = await store.create(cms, "default", {"metadata": {"name": "keeper"}})
    refs = [_ref(doomed, block=True), {**_ref(keeper, block=False), "controller": False}]
    await store.create(cms, "default", {"metadata": {"name": "shared", "ownerReferences": refs}})
    await store.delete(cms, "default", "doomed", propagation_policy="Foreground")
    await wait_for(store, cms, "default", "doomed", _gone)
    shared = await store.get(cms, "default", "shared")
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["keeper"]


async def test_foreground_propagates_down_a_chain_of_blocking_dependents(store: Store) -> None:
    cms = info(store, "", "configmaps")
    top = await store.create(cms, "default", {"metadata": {"name": "top"}})
    middle = await store.create(cms, "default", _owned("middle", top, block=True))
    leaf = _owned("leaf", middle, block=True)
    leaf["metadata"]["finalizers"] = ["test/hold"]
    await store.create(cms, "default", leaf)
    await store.delete(cms, "default", "top", propagation_policy="Foreground")
    held = await wait_for(
        store, cms, "default", "leaf", lambda o: bool(o and o["metadata"].get("deletionTimestamp"))
    )
    assert held is not None
    # The middle object is deleted in the foreground too, so neither it nor the top goes
    # while the leaf is held by its finalizer.
    middle_now = await store.get(cms, "default", "middle")
    assert "foregroundDeletion" in middle_now["metadata"]["finalizers"]
    assert (await store.get(cms, "default", "top"))["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    await store.update(cms, "default", "leaf", held)
    await wait_for(store, cms, "default", "top", _gone)
    await wait_for(store, cms, "default", "middle", _gone)
