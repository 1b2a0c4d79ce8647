"""Watch over HTTP: replay from an RV, live events, bookmarks, timeouts, 410, Table rows."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from rayop.sim.storage.store import Store

from .server_harness import AUTH, POD, Harness, open_harness, pod


async def _events(h: Harness, path: str, n: int, **params: Any) -> list[dict[str, Any]]:
    """Reads n events (or until the stream ends) from a watch request."""
    q = {"watch": "1", **{k: str(v) for k, v in params.items()}}
    out: list[dict[str, Any]] = []
    headers = {**AUTH, **params.pop("headers", {})} if "headers" in params else AUTH
    async with h.client.get(path, params=q, headers=headers) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("application/json")
        async for line in r.content:
            out.append(orjson.loads(line))
            if len(out) >= n:
                break
    return out


async def test_watch_from_rv_replays_then_streams_live() -> None:
    async with open_harness() as h:
        _, a = await h.call("POST", POD, pod("a", app="x"))
        rv = a["metadata"]["resourceVersion"]
        await h.call("POST", POD, pod("b", app="x"))
        reader = asyncio.create_task(_events(h, POD, 2, resourceVersion=rv, labelSelector="app=x"))
        await h.call("POST", POD, pod("c", app="other"))
        await h.call("DELETE", POD + "/a")
        evs = await asyncio.wait_for(reader, 5)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
            ("ADDED", "b"),
            ("DELETED", "a"),
        ]
        deleted = evs[1]["object"]
        assert int(deleted["metadata"]["resourceVersion"]) > int(rv)


async def test_watch_without_rv_sends_synthetic_added_first() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        await h.call("POST", POD, pod("b"))
        evs = await _events(h, POD, 2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
        ]


async def test_bookmarks_and_timeout_end_the_stream() -> None:
    async with open_harness(bookmark_interval=0.05) as h:
        _, a = await h.call("POST", POD, pod("a"))
        rv = a["metadata"]["resourceVersion"]
        evs = await _events(
            h, POD, 100, resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds=1
        )
        assert evs and all(e["type"] == "BOOKMARK" for e in evs)
        assert evs[0]["object"]["kind"] == "Pod"
        assert evs[0]["object"]["metadata"]["resourceVersion"] == rv


async def test_too_old_rv_gives_expired_error_event() -> None:
    store = Store(graceful_pod_deletion=False, history_size=3)
    async with open_harness(store=store) as h:
        for i in range(6):
            await h.call("POST", POD, pod(f"p{i}"))
        evs = await _events(h, POD, 1, resourceVersion="2")
        assert evs[0]["type"] == "ERROR"
        status = evs[0]["object"]
        assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
        assert status["message"].startswith("too old resource version: 2")


async def test_send_initial_events_streams_the_state_then_the_end_marker_then_live() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        _, b = await h.call("POST", POD, pod("b"))
        reader = asyncio.create_task(
            _events(
                h,
                POD,
                4,
                sendInitialEvents="true",
                resourceVersionMatch="NotOlderThan",
                allowWatchBookmarks="true",
                timeoutSeconds=5,
            )
        )
        await asyncio.sleep(0.2)
        await h.call("POST", POD, pod("c"))
        evs = await asyncio.wait_for(reader, 5)
        assert [
            (e["type"], e["object"]["metadata"]["name"]) for e in evs if e["type"] != "BOOKMARK"
        ] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
            ("ADDED", "c"),
        ]
        marker = evs[2]
        assert marker["type"] == "BOOKMARK"
        assert marker["object"]["metadata"] == {
            "resourceVersion": b["metadata"]["resourceVersion"],
            "annotations": {"k8s.io/initial-events-end": "true"},
        }


async def test_watch_list_options_are_checked_as_kube_apiserver_does() -> None:
    async with open_harness() as h:
        code, err = await h.call("GET", POD, watch="1", sendInitialEvents="true")
        assert code == 422 and err["reason"] == "Invalid"
        assert err["details"]["causes"][0]["message"] == (
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        )
        code, err = await h.call("GET", POD, watch="1", resourceVersionMatch="NotOlderThan")
        assert code == 422 and "unless sendInitialEvents is provided" in err["message"]
        code, err = await h.call(
            "GET",
            POD,
            watch="1",
            sendInitialEvents="true",
            resourceVersionMatch="NotOlderThan",
            resourceVersion="99999",
        )
        assert code == 504 and "Too large resource version" in err["message"]


async def test_watch_faults_drop_after_events_and_delay() -> None:
    async with open_harness() as h:
        for i in range(5):
            await h.call("POST", POD, pod(f"p{i}"))
        h.faults.watch_drop_after_events = 2
        evs = await _events(h, POD, 100)
        assert len(evs) == 2

    async with open_harness() as h:
        h.faults.watch_delay = 0.3
        _, lst = await h.call("GET", POD)
        reader = asyncio.create_task(
            _events(h, POD, 10, resourceVersion=lst["metadata"]["resourceVersion"])
        )
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for i in range(10):
            await h.call("POST", POD, pod(f"late-{i}"))
        evs = await asyncio.wait_for(reader, 5)
        elapsed = loop.time() - t0
        # Informer lag: every event arrives about watch_delay after its commit, in order; a
        # burst is not spaced out by the delay (10 events would take 3 s if it were).
        assert [e["object"]["metadata"]["name"] for e in evs] == [f"late-{i}" for i in range(10)]
        assert 0.3 <= elapsed < 1.5


async def test_watch_as_table_for_kubectl_get_w() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        evs = await _events(h, POD, 1, headers={"Accept": accept})
        obj = evs[0]["object"]
        assert obj["kind"] == "Table" and obj["rows"][0]["cells"][0] == "a"
        assert obj["columnDefinitions"]


async def test_watch_drop_after_seconds_closes_stream_early() -> None:
    async with open_harness() as h:
        h.faults.watch_drop_after_seconds = 0.2
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        _, lst = await h.call("GET", POD)
        evs = await _events(h, POD, 10, resourceVersion=lst["metadata"]["resourceVersion"])
        assert evs == [] and 0.2 <= loop.time() - t0 < 5


async def test_store_watch_iterator_yields_copies_and_bookmarks() -> None:
    store = Store(graceful_pod_deletion=False)
    cms = store.resources.get("", "v1", "configmaps")
    assert cms
    gen = store.watch(
        cms, "default", resource_version=str(store.current_rv()), bookmark_interval=0.05
    )
    t, obj = await anext(gen)
    assert t == "BOOKMARK" and obj["metadata"]["resourceVersion"] == str(store.current_rv())
    await store.create(cms, "default", {"metadata": {"name": "a"}})
    t, obj = await anext(gen)
    assert (t, obj["metadata"]["name"]) == ("ADDED", "a")
    obj["metadata"]["name"] = "mutated"
    stored = store.peek(cms, "default", "a")
    assert stored is not None and stored["metadata"]["name"] == "a"
    await gen.aclose()


async def test_watch_on_a_named_object_path_follows_that_object_only() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        await h.call("POST", POD, pod("b"))
        evs = await _events(h, POD + "/b", 1)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [("ADDED", "b")]
