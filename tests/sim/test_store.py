"""Store semantics: resourceVersion, create/update/delete, status, finalizers, watches."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.sim.machinery.errors import StatusError
from rayop.sim.storage.store import Store


def _infos(store: Store) -> tuple[Any, Any, Any]:
    pods = store.resources.get("", "v1", "pods")
    cms = store.resources.get("", "v1", "configmaps")
    svcs = store.resources.get("", "v1", "services")
    assert pods and cms and svcs
    return pods, cms, svcs


async def test_create_sets_metadata_and_rv_increases() -> None:
    store = Store(seed=1)
    pods, cms, _ = _infos(store)
    rv0 = store.current_rv()
    a = await store.create(pods, "default", {"metadata": {"generateName": "w-"}, "spec": {}})
    b = await store.create(cms, "default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    assert a["metadata"]["name"].startswith("w-") and len(a["metadata"]["name"]) == 7
    assert a["metadata"]["uid"] and a["metadata"]["creationTimestamp"].endswith("Z")
    assert a["status"]["phase"] == "Pending" and a["metadata"]["generation"] == 1
    assert int(a["metadata"]["resourceVersion"]) == rv0 + 1
    assert int(b["metadata"]["resourceVersion"]) == rv0 + 2 == store.current_rv()
    with pytest.raises(StatusError) as ei:
        await store.create(cms, "default", {"metadata": {"name": "c"}})
    assert ei.value.code == 409 and ei.value.reason == "AlreadyExists"
    with pytest.raises(StatusError) as ei:
        await store.create(cms, "nope", {"metadata": {"name": "c"}})
    assert ei.value.code == 404


async def test_returned_objects_are_copies() -> None:
    store = Store()
    _, cms, _ = _infos(store)
    body = {"metadata": {"name": "c"}, "data": {"k": "v"}}
    out = await store.create(cms, "default", body)
    body["data"]["k"] = "changed"
    out["data"]["k"] = "changed"
    assert (await store.get(cms, "default", "c"))["data"]["k"] == "v"


async def test_update_conflict_noop_and_status_semantics() -> None:
    store = Store()
    pods, _, _ = _infos(store)
    p = await store.create(pods, "default", {"metadata": {"name": "p"}, "spec": {"x": 1}})
    stale = dict(p)
    p["spec"]["x"] = 2
    p2 = await store.update(pods, "default", "p", p)
    assert p2["metadata"]["generation"] == 2
    with pytest.raises(StatusError) as ei:
        await store.update(pods, "default", "p", stale)
    assert ei.value.code == 409 and ei.value.reason == "Conflict"
    rv = store.current_rv()
    same = await store.update(pods, "default", "p", p2)
    assert same["metadata"]["resourceVersion"] == p2["metadata"]["resourceVersion"]
    assert store.current_rv() == rv
    # a main write ignores status; a status write ignores spec and labels
    p2["status"] = {"phase": "Running"}
    p3 = await store.update(pods, "default", "p", p2)
    assert p3["status"]["phase"] == "Pending"
    p3["status"] = {"phase": "Running"}
    p3["spec"]["x"] = 99
    p3["metadata"]["labels"] = {"a": "b"}
    p4 = await store.update(pods, "default", "p", p3, subresource="status")
    assert p4["status"]["phase"] == "Running" and p4["spec"]["x"] == 2
    assert "labels" not in p4["metadata"] and p4["metadata"]["generation"] == 2


async def test_finalizers_and_graceful_pod_delete() -> None:
    store = Store()
    pods, cms, _ = _infos(store)
    await store.create(cms, "default", {"metadata": {"name": "c", "finalizers": ["x/y"]}})
    d = await store.delete(cms, "default", "c")
    assert d["metadata"]["deletionTimestamp"]
    cur = await store.get(cms, "default", "c")
    cur["metadata"]["finalizers"].append("new")
    with pytest.raises(StatusError) as ei:
        await store.update(cms, "default", "c", cur)
    assert ei.value.code == 422
    cur["metadata"]["finalizers"] = []
    await store.update(cms, "default", "c", cur)
    with pytest.raises(StatusError):
        await store.get(cms, "default", "c")
    await store.create(pods, "default", {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}})
    d = await store.delete(pods, "default", "p")
    assert d["metadata"]["deletionGracePeriodSeconds"] == 30
    assert await store.finalize_delete(pods, "default", "p")
    assert store.peek(pods, "default", "p") is None
    # an unscheduled pod goes at once
    await store.create(pods, "default", {"metadata": {"name": "q"}, "spec": {}})
    await store.delete(pods, "default", "q")
    assert store.peek(pods, "default", "q") is None


async def test_services_get_cluster_ips_and_node_ports() -> None:
    store = Store()
    _, _, svcs = _infos(store)
    a = await store.create(
        svcs, "default", {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}}
    )
    h = await store.create(
        svcs, "default", {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}
    )
    n = await store.create(
        svcs,
        "default",
        {"metadata": {"name": "n"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}},
    )
    assert a["spec"]["clusterIP"].startswith("10.") and a["spec"]["ports"][0]["targetPort"] == 80
    assert h["spec"]["clusterIP"] == "None"
    assert 30000 <= n["spec"]["ports"][0]["nodePort"] <= 32767


async def test_watch_replay_live_selectors_and_expired() -> None:
    store = Store(history_size=5)
    _, cms, _ = _infos(store)
    await store.create(cms, "default", {"metadata": {"name": "a", "labels": {"app": "x"}}})
    rv = store.current_rv()
    stream = store.open_watch(cms, "default", resource_version=str(rv), label_selector="app=x")
    b = await store.create(cms, "default", {"metadata": {"name": "b", "labels": {"app": "x"}}})
    b["metadata"]["labels"]["app"] = "y"
    await store.update(cms, "default", "b", b)
    ev1 = await stream.next(1)
    ev2 = await stream.next(1)
    assert ev1 and ev2 and (ev1.type, ev2.type) == ("ADDED", "DELETED")
    assert await stream.next(0.01) is None
    stream.close()
    # synthetic ADDED for rv=None
    events = []
    async for t, obj in store.watch(cms, "default", label_selector="app=x"):
        events.append((t, obj["metadata"]["name"]))
        break
    assert events == [("ADDED", "a")]
    for i in range(10):
        await store.create(cms, "default", {"metadata": {"name": f"n{i}"}})
    with pytest.raises(StatusError) as ei:
        store.open_watch(cms, resource_version=str(rv))
    assert ei.value.code == 410 and ei.value.reason == "Expired"


async def test_subscribe_sees_changes_in_order() -> None:
    store = Store()
    _, cms, _ = _infos(store)
    seen: list[tuple[str, str, bool]] = []
    unsub = store.subscribe(
        lambda t, i, o, old: seen.append((t, o["metadata"]["name"], old is None))
    )
    await store.create(cms, "default", {"metadata": {"name": "a"}})
    c = await store.get(cms, "default", "a")
    c["data"] = {"x": "y"}
    await store.update(cms, "default", "a", c)
    await store.delete(cms, "default", "a")
    unsub()
    await store.create(cms, "default", {"metadata": {"name": "b"}})
    assert seen == [("ADDED", "a", True), ("MODIFIED", "a", False), ("DELETED", "a", False)]


async def test_foreground_delete_sets_finalizer_and_namespace_delete() -> None:
    store = Store()
    _, cms, _ = _infos(store)
    nsi = store.resources.get("", "v1", "namespaces")
    assert nsi
    await store.create(nsi, None, {"metadata": {"name": "t"}})
    await store.create(cms, "t", {"metadata": {"name": "a"}})
    d = await store.delete(cms, "t", "a", propagation_policy="Foreground")
    assert d["metadata"]["finalizers"] == ["foregroundDeletion"]
    ns = await store.delete(nsi, None, "t")
    assert ns["status"]["phase"] == "Terminating"
    cur = await store.get(cms, "t", "a")
    cur["metadata"]["finalizers"] = []
    await store.update(cms, "t", "a", cur)
    assert store.peek(nsi, None, "t") is None


async def test_names_and_labels_are_validated_like_kube_apiserver() -> None:
    store = Store()
    pods, cms, svcs = _infos(store)
    for info, name in ((pods, "Upper"), (svcs, "1svc"), (cms, "a" * 254)):
        with pytest.raises(StatusError) as ei:
            await store.create(info, "default", {"metadata": {"name": name}})
        assert ei.value.code == 422 and "metadata.name" in str(ei.value)
    with pytest.raises(StatusError) as ei:
        await store.create(cms, "default", {"metadata": {"name": "ok", "labels": {"a": "x" * 64}}})
    assert "must be no more than 63 characters" in str(ei.value)
    ok = await store.create(
        cms, "default", {"metadata": {"name": "ok.v1", "labels": {"ray.io/node-type": "head"}}}
    )
    ok["metadata"]["labels"]["bad key!"] = "v"
    with pytest.raises(StatusError):
        await store.update(cms, "default", "ok.v1", ok)


async def test_events_v1_and_core_events_are_the_same_objects() -> None:
    store = Store()
    new_ev = store.resources.get("events.k8s.io", "v1", "events")
    core_ev = store.resources.get("", "v1", "events")
    assert new_ev and core_ev
    stream = store.open_watch(new_ev, "default", resource_version=str(store.current_rv()))
    made = await store.create(
        new_ev,
        "default",
        {
            "metadata": {"name": "e1"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "note": "hello",
            "reason": "Created",
            "type": "Normal",
            "reportingController": "rayop",
            "action": "Create",
            "eventTime": "2026-01-01T00:00:00.000000Z",
        },
    )
    assert made["apiVersion"] == "events.k8s.io/v1" and made["note"] == "hello"
    core = await store.get(core_ev, "default", "e1")
    assert core["apiVersion"] == "v1" and core["message"] == "hello"
    assert core["involvedObject"]["name"] == "p" and core["reportingComponent"] == "rayop"
    items, _ = store.list(core_ev, "default", field_selector="involvedObject.name=p")
    assert [i["metadata"]["name"] for i in items] == ["e1"]
    ev = await stream.next(1)
    assert ev is not None and ev.obj["note"] == "hello"
    stream.close()
    got = await store.get(new_ev, "default", "e1")
    got["note"] = "changed"
    await store.update(new_ev, "default", "e1", got)
    assert (await store.get(core_ev, "default", "e1"))["message"] == "changed"


async def test_graceful_pod_with_finalizer_goes_once_kubelet_done_and_finalizer_removed() -> None:
    store = Store()
    pods, _, _ = _infos(store)
    await store.create(
        pods,
        "default",
        {"metadata": {"name": "p", "finalizers": ["x/y"]}, "spec": {"nodeName": "n"}},
    )
    await store.delete(pods, "default", "p")
    assert not await store.finalize_delete(pods, "default", "p")
    cur = await store.get(pods, "default", "p")
    assert cur["metadata"]["deletionGracePeriodSeconds"] == 0
    cur["metadata"]["finalizers"] = []
    await store.update(pods, "default", "p", cur)
    assert store.peek(pods, "default", "p") is None
