"""Watch streams: newline-delimited JSON decoded across any chunk boundaries; ERROR raised."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp import web

from rayop.kube import errors
from rayop.kube.client import KubeClient, WatchEvent
from rayop.kube.resources import PODS
from rayop.kube.watch import WatchDecoder

from .kube_fakes import FakeApiServer, json_response, status_body

PODS_PATH = "/api/v1/namespaces/ns/pods"


def event(kind: str, name: str, rv: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "object": {"kind": "Pod", "metadata": {"name": name, "resourceVersion": rv, **extra}},
    }


EVENTS = [
    event("ADDED", "a", "1"),
    event("MODIFIED", "a", "2", annotations={"note": "héllo ✓ 日本"}),
    {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "3"}}},
    event("DELETED", "a", "4"),
]
STREAM = b"".join(orjson.dumps(e) + b"\n" for e in EVENTS)


def test_decoder_handles_every_split_point() -> None:
    for cut in range(len(STREAM) + 1):
        decoder = WatchDecoder()
        decoded = decoder.feed(STREAM[:cut]) + decoder.feed(STREAM[cut:]) + decoder.finish()
        assert decoded == EVENTS, cut


def test_decoder_byte_by_byte_and_missing_final_newline() -> None:
    decoder = WatchDecoder()
    decoded: list[dict[str, Any]] = []
    for i in range(len(STREAM) - 1):  # drop the last newline
        decoded += decoder.feed(STREAM[i : i + 1])
    assert decoded == EVENTS[:-1]
    assert decoder.pending > 0
    assert decoder.finish() == EVENTS[-1:]


def test_decoder_reports_garbage_as_api_error() -> None:
    with pytest.raises(errors.ApiError):
        WatchDecoder().feed(b"{not json\n")


def streaming_route(api: FakeApiServer, chunks: list[bytes], seen: list[dict[str, str]]) -> None:
    @api.route("GET", PODS_PATH)
    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.query))
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
            await asyncio.sleep(0)  # let each chunk go out on its own
        await response.write_eof()
        return response


async def test_watch_streams_events_cut_across_chunks(
    api: FakeApiServer, client: KubeClient
) -> None:
    big = event("ADDED", "big", "5", annotations={"blob": "x" * 300_000})  # > aiohttp's line limit
    stream = STREAM + orjson.dumps(big) + b"\n"
    chunks = [stream[i : i + 7] for i in range(0, 203, 7)] + [stream[203:]]
    seen: list[dict[str, str]] = []
    streaming_route(api, chunks, seen)
    async with client.watch(
        PODS, namespace="ns", label_selector="app=x", resource_version="0", timeout_seconds=30
    ) as events:
        got = [ev async for ev in events]
    assert got == [WatchEvent(e["type"], e["object"]) for e in [*EVENTS, big]]
    assert seen == [
        {
            "watch": "true",
            "labelSelector": "app=x",
            "resourceVersion": "0",
            "timeoutSeconds": "30",
            "allowWatchBookmarks": "true",
        }
    ]


async def test_error_event_410_is_raised_as_gone_expired(
    api: FakeApiServer, client: KubeClient
) -> None:
    expired = status_body(410, "Expired", "too old resource version: 1 (5)")
    error_line = orjson.dumps({"type": "ERROR", "object": expired}) + b"\n"
    streaming_route(api, [STREAM[:30], STREAM[30:] + error_line[:10], error_line[10:]], [])
    got: list[WatchEvent] = []
    with pytest.raises(errors.Gone) as info:
        async with client.watch(PODS, namespace="ns", resource_version="1") as events:
            async for ev in events:
                got.append(ev)
    assert len(got) == len(EVENTS)
    assert info.value.reason == "Expired"
    assert info.value.code == 410
    assert info.value.status == expired


async def test_refused_watch_raises_on_enter(api: FakeApiServer, client: KubeClient) -> None:
    @api.route("GET", PODS_PATH)
    async def handler(request: web.Request) -> web.Response:
        return json_response(status_body(403, "Forbidden", "pods is forbidden"), 403)

    with pytest.raises(errors.Forbidden):
        async with client.watch(PODS, namespace="ns", allow_bookmarks=False):
            pytest.fail("entered a refused watch")


async def test_leaving_the_context_closes_an_endless_stream(
    api: FakeApiServer, client: KubeClient
) -> None:
    closed = asyncio.Event()

    @api.route("GET", PODS_PATH)
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(orjson.dumps(EVENTS[0]) + b"\n")
        try:
            await asyncio.Event().wait()  # never ends by itself
        finally:
            closed.set()
        return response

    async with client.watch(PODS, namespace="ns") as events:
        first = await anext(aiter(events))
    assert first.type == "ADDED"
    await asyncio.wait_for(closed.wait(), 5)


async def test_a_connection_dropped_mid_event_raises_transport_error(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("GET", PODS_PATH)
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(STREAM[:50])
        assert request.transport is not None
        request.transport.close()  # abort with half an event in flight
        return response

    with pytest.raises(errors.TransportError) as info:
        async with client.watch(PODS, namespace="ns") as events:
            async for _ in events:
                pass
    assert info.value.__cause__ is not None
