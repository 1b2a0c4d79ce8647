"""Watch: event stream from a resourceVersion, selectors, bookmarks, timeouts, 410 Expired (W1, W2)."""

from __future__ import annotations

import asyncio
from typing import Any

from .conftest import HISTORY, external_kubeconfig
from .kubehttp import MERGE, Kube


async def _collect(events: Any, count: int) -> list[dict[str, Any]]:
    out = []
    async with asyncio.timeout(30):
        async for event in events:
            if event["type"] != "BOOKMARK":
                out.append(event)
            if len(out) == count:
                break
    return out


async def test_watch_from_a_version_streams_later_changes(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    _, listed = await kube.get(cms)
    rv = listed["metadata"]["resourceVersion"]
    async with kube.watch(cms, resourceVersion=rv, allowWatchBookmarks=True) as (status, events):
        assert status == 200
        await kube.post(cms, {"metadata": {"name": "w"}})
        await kube.patch(f"{cms}/w", {"data": {"a": "1"}}, MERGE)
        await kube.delete(f"{cms}/w")
        got = await _collect(events, 3)
    assert [e["type"] for e in got] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(e["object"]["metadata"]["name"] == "w" for e in got)
    assert got[1]["object"]["data"] == {"a": "1"}
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in got]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


async def test_watch_without_version_starts_with_current_state(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.post(cms, {"metadata": {"name": "pre1"}})
    await kube.post(cms, {"metadata": {"name": "pre2"}})
    async with kube.watch(cms) as (status, events):
        assert status == 200
        got = await _collect(events, 2)
    assert sorted(e["object"]["metadata"]["name"] for e in got) == ["pre1", "pre2"]
    assert {e["type"] for e in got} == {"ADDED"}


async def test_label_selector_transitions_appear_as_added_and_deleted(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    _, created = await kube.post(cms, {"metadata": {"name": "sel", "labels": {"on": "no"}}})
    rv = created["metadata"]["resourceVersion"]
    async with kube.watch(cms, resourceVersion=rv, labelSelector="on=yes") as (status, events):
        assert status == 200
        await kube.patch(f"{cms}/sel", {"metadata": {"labels": {"on": "yes"}}}, MERGE)
        await kube.patch(f"{cms}/sel", {"metadata": {"labels": {"on": "no"}}}, MERGE)
        got = await _collect(events, 2)
    assert [e["type"] for e in got] == ["ADDED", "DELETED"]


async def test_bookmarks_carry_only_a_resource_version(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    bookmarks = 0
    async with kube.watch(cms, allowWatchBookmarks=True, timeoutSeconds=1) as (status, events):
        assert status == 200
        async with asyncio.timeout(30):
            async for event in events:
                assert event["type"] == "BOOKMARK", event
                obj = event["object"]
                assert obj["kind"] == "ConfigMap" and obj["metadata"]["resourceVersion"]
                assert set(obj["metadata"]) <= {"resourceVersion", "annotations"}
                bookmarks += 1
    if external_kubeconfig() is None:  # a real server sends them at its own discretion
        assert bookmarks >= 1


async def test_timeout_seconds_ends_the_stream(kube: Kube, ns: str) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with kube.watch(f"/api/v1/namespaces/{ns}/configmaps", timeoutSeconds=1) as (
        status,
        events,
    ):
        assert status == 200
        async with asyncio.timeout(30):
            async for _ in events:
                pass
    assert 0.5 <= loop.time() - start < 20


async def test_too_old_resource_version_is_expired(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.post(cms, {"metadata": {"name": "churn"}})
    for i in range(HISTORY + 20):  # push the version out of the retained history
        await kube.patch(f"{cms}/churn", {"data": {"i": str(i)}}, MERGE)
    async with kube.watch(cms, resourceVersion="1") as (status, events):
        if status == 200:
            async with asyncio.timeout(30):
                event = await anext(aiter(events))
            if event["type"] == "ADDED" and external_kubeconfig():
                # A real watch cache that has dropped no event since it started replays its
                # whole history to a watch from an older version (docs/known-differences.md).
                assert event["object"]["metadata"]["name"] == "churn"
                return
            assert event["type"] == "ERROR"
            body = event["object"]
        else:
            assert status == 410
            body = None
    if body is not None:
        assert body["kind"] == "Status" and body["code"] == 410 and body["reason"] == "Expired"
        assert "too old resource version" in body["message"]


async def test_send_initial_events_is_supported_or_refused(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.post(cms, {"metadata": {"name": "init"}})
    params = {
        "sendInitialEvents": True,
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": True,
    }
    async with kube.watch(cms, **params) as (status, events):
        if status != 200:
            assert 400 <= status < 500
            return
        async with asyncio.timeout(30):
            seen = []
            async for event in events:
                seen.append(event)
                if event["type"] == "BOOKMARK":
                    annotations = event["object"]["metadata"].get("annotations") or {}
                    if annotations.get("k8s.io/initial-events-end") == "true":
                        break
    assert [e["object"]["metadata"]["name"] for e in seen if e["type"] == "ADDED"] == ["init"]
