"""The direct dashboard transport with a ServiceResolver: asked at each call, None is no answer."""

from __future__ import annotations

import pytest
from aiohttp import web

from rayop.controllers.dashboard.errors import DashboardUnavailable
from rayop.controllers.dashboard.transport import DashboardRequest, DirectTransport

URL = "http://head-svc.ns.svc.cluster.local:8265"


async def test_the_resolver_is_asked_at_every_call_and_its_base_url_used() -> None:
    async def version(request: web.Request) -> web.Response:
        return web.json_response(request.match_info["uid"])

    app = web.Application()
    app.router.add_get("/h/{uid}/dashboard/api/version", version)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    asked: list[str] = []
    heads = iter(["first", "second"])

    def resolver(url: str) -> str:
        asked.append(url)
        return f"http://127.0.0.1:{port}/h/{next(heads)}/dashboard"

    transport = DirectTransport(URL, resolver=resolver)
    try:
        request = DashboardRequest(method="GET", path="/api/version")
        assert await transport.send(request) == (200, b'"first"')
        assert await transport.send(request) == (200, b'"second"')  # a new head, a new address
    finally:
        await transport.close()
        await runner.cleanup()
    assert asked == [URL, URL]


async def test_a_name_that_does_not_resolve_is_no_answer() -> None:
    transport = DirectTransport(URL, resolver=lambda url: None)
    try:
        with pytest.raises(DashboardUnavailable, match="no address for " + URL):
            await transport.send(DashboardRequest(method="GET", path="/api/version"))
    finally:
        await transport.close()
