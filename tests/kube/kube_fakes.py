"""Test helpers for the kube client: a scriptable aiohttp API server and its JSON answers.

The stepping clock these tests use is :class:`rayop.testing.FakeClock` with ``autojump=True``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Recorded:
    """One request the fake server received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeApiServer:
    """An HTTP server whose answers each test scripts: ``routes[(method, path)] = handler``."""

    server: TestServer
    routes: dict[tuple[str, str], Handler] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)

    @property
    def url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    def route(self, method: str, path: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.routes[(method, path)] = handler
            return handler

        return register

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and r.path == path)


def json_response(obj: Any, status: int = 200, **headers: str) -> web.Response:
    return web.Response(
        body=orjson.dumps(obj), status=status, content_type="application/json", headers=headers
    )


def status_body(code: int, reason: str, message: str = "boom", **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


async def start_fake_api() -> FakeApiServer:
    """Starts a fake API server on a loopback port; the caller closes ``.server``."""
    holder: list[FakeApiServer] = []

    async def dispatch(request: web.Request) -> web.StreamResponse:
        fake = holder[0]
        fake.requests.append(
            Recorded(
                request.method,
                request.path,
                dict(request.query),
                dict(request.headers),
                await request.read(),
            )
        )
        handler = fake.routes.get((request.method, request.path))
        if handler is None:
            return json_response(status_body(404, "NotFound", f"no route {request.path}"), 404)
        return await handler(request)

    app = web.Application(client_max_size=3 * 1024 * 1024)  # kube-apiserver's body limit
    app.router.add_route("*", "/{tail:.*}", dispatch)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    holder.append(FakeApiServer(server))
    return holder[0]
