"""Malformed and oversized requests against the embedded API server: a client's mistake gets a
4xx Status (or the answer a valid request gets), never a 5xx, a dropped connection or a hang,
and the server's memory stays bounded."""

from __future__ import annotations

import gc
import io
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
import pytest
from hypothesis import given
from yarl import URL

from rayop.sim.apiserver.request_body import MAX_BODY_BYTES
from tests.sim.server_harness import AUTH

from .budget import fuzz_settings
from .objects import base
from .plane import REQUEST_SECONDS, FuzzPlane, open_fuzz_plane
from .requests import FuzzRequest, fuzzed_requests

_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_SERVER_HELD_LIMIT = 8 * 1024 * 1024
_SERVER_CODE = [
    tracemalloc.Filter(True, "*/rayop/sim/*", all_frames=True),
    tracemalloc.Filter(True, "*/aiohttp/web*", all_frames=True),
]


def _server_held() -> int:
    """Bytes still allocated by the server's code (any frame in rayop.sim or aiohttp's server)
    since tracemalloc started: what it keeps of the requests it answered."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(_SERVER_CODE)
    return sum(stat.size for stat in snapshot.statistics("filename"))


@pytest.fixture(scope="module")
def plane() -> Iterator[FuzzPlane]:
    with open_fuzz_plane() as running:
        seed = [
            ("/api/v1/namespaces/default/pods",
             {"metadata": {"name": "p0"}, "spec": {"containers": [{"name": "c", "image": "b"}]}}),
            ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c0"}}),
            ("/apis/ray.io/v1/namespaces/default/rayclusters", base("RayCluster")),
        ]
        for path, obj in seed:
            code, body = running.run(running.h.call("POST", path, obj))
            assert code == 201, body
        yield running


async def _send(plane: FuzzPlane, req: FuzzRequest) -> tuple[int, bytes, str]:
    """Sends one request; returns (status, body or b"" for a streaming watch, content type)."""
    headers = {**AUTH, **req.headers}
    data = None if req.body is None else io.BytesIO(req.body)
    root = str(plane.h.client.make_url("/")).rstrip("/")
    url = URL(root + quote(req.path, safe=_PATH_SAFE), encoded=True)  # sent as it is
    async with plane.h.client.session.request(
        req.method, url, params=req.query, data=data, headers=headers
    ) as r:
        if r.status == 200 and req.watch:
            return r.status, b"", r.content_type  # a stream: its start is the answer
        return r.status, await r.read(), r.content_type


def _allowed_5xx(code: int, body: bytes, req: FuzzRequest) -> bool:
    """kube-apiserver's own 5xx answers to a request, which it gives for valid ones too: 504 for
    a resourceVersion newer than the store ("Too large resource version"), 503 from the
    services proxy of a service with nothing behind it."""
    if code == 504 and b"Too large resource version" in body:
        return True
    return code == 503 and "/proxy" in req.path


def _check(req: FuzzRequest, code: int, body: bytes, ctype: str) -> None:
    assert code < 500 or _allowed_5xx(code, body, req), (code, body[:300])
    if code < 400 or req.method == "HEAD":
        return
    if ctype == "application/json":
        status = orjson.loads(body)
        assert status["kind"] == "Status" and status["code"] == code, status
        assert status["message"], status
    else:  # aiohttp refusing the request line or headers itself, before any handler runs
        assert code in (400, 405, 413, 415, 406) or ctype in ("application/yaml",
            "application/vnd.kubernetes.protobuf"), (code, ctype, body[:300])


def test_malformed_requests_get_a_4xx_status_never_5xx_nor_a_dropped_connection(
    plane: FuzzPlane,
) -> None:
    tally: dict[int, int] = {}

    @fuzz_settings()
    @given(fuzzed_requests())
    def one(req: FuzzRequest) -> None:
        start = time.monotonic()
        try:
            code, body, ctype = plane.run(_send(plane, req))
        except aiohttp.ClientError as exc:  # a dropped connection
            raise AssertionError(f"{req}: {exc!r}") from exc
        assert time.monotonic() - start < REQUEST_SECONDS
        _check(req, code, body, ctype)
        tally[code] = tally.get(code, 0) + 1

    one()
    print(f"answers by status: {dict(sorted(tally.items()))}")
    assert sum(n for c, n in tally.items() if c >= 400) > 0, tally
    code, _ = plane.run(plane.h.call("GET", "/api/v1/namespaces/default/pods/p0"))
    assert code in (200, 404)  # still serving


def test_a_body_stream_longer_than_its_limit_is_refused_without_reading_it_all(
    plane: FuzzPlane,
) -> None:
    """A chunked body (no Content-Length) is cut off at the limit: 413, memory stays put."""

    async def endless() -> Any:
        chunk = b"x" * 65536
        for _ in range(4096):  # 256 MiB if the server read it all
            yield chunk

    async def send() -> tuple[int, Any]:
        headers = {**AUTH, "Content-Type": "application/json"}
        async with plane.h.client.post(
            "/api/v1/namespaces/default/configmaps", data=endless(), headers=headers
        ) as r:
            return r.status, await r.json()

    tracemalloc.start(30)
    try:
        code, body = plane.run(send(), 60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 413 and body["reason"] == "RequestEntityTooLarge", body
    assert peak < 32 * 1024 * 1024, peak  # 3 MiB read, not 256


def test_the_server_keeps_nothing_of_the_hostile_bodies_it_refused(plane: FuzzPlane) -> None:
    """Huge, deep and aliased bodies, each refused, leave the server holding what it held."""
    limit = MAX_BODY_BYTES
    bodies = [
        b'{"metadata":{"name":"h0","annotations":{"a":"' + b"x" * (limit - 100) + b'"}}}',
        b'{"metadata":{"name":"h1","annotations":{"a":"' + b"x" * (limit + 1) + b'"}}}',
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b"[" * 200_000,
        b"\n".join(
            [b"a0: &a0 [x, x, x, x, x, x, x, x]"]
            + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]".encode() for i in range(1, 9)]
        ),
    ]
    tracemalloc.start(30)
    try:
        for _ in range(4):
            for raw in bodies:
                req = FuzzRequest("POST", "/api/v1/namespaces/default/configmaps", body=raw,
                                  headers={"Content-Type": "application/yaml"})
                code, body, ctype = plane.run(_send(plane, req))
                _check(req, code, body, ctype)
                assert 400 <= code < 500
        held = _server_held()
    finally:
        tracemalloc.stop()
    assert held < _SERVER_HELD_LIMIT, held
