"""The embedded plane's forward proxy relays each exchange on a connection of its own: heads
that never answer (more of them than aiohttp's default pool of 100) hold no other request."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from rayop.sim.dashboard.http_proxy import ClusterHttpProxy

HANGING = 120
"""More exchanges in flight than an aiohttp session's default connection limit (100)."""


class OneHead:
    """Serves every Service and pod IP at one base URL."""

    def __init__(self, base: str) -> None:
        self.base = base

    def resolve_service_url(self, namespace: str, service: str, port: str) -> str | None:
        return self.base

    def resolve_pod_ip_url(self, pod_ip: str, port: str) -> str | None:
        return self.base


async def test_hanging_exchanges_hold_no_other_request() -> None:
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="late")

    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/hang", hang)
    app.router.add_get("/ok", ok)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with (
            ClusterHttpProxy(OneHead(f"http://127.0.0.1:{port}")) as proxy,
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session,
        ):
            url = "http://head-svc.ns.svc.cluster.local:8265"

            async def get(path: str) -> str:
                async with session.get(url + path, proxy=proxy.url) as resp:
                    return await resp.text()

            hanging = [asyncio.ensure_future(get("/hang")) for _ in range(HANGING)]
            await asyncio.sleep(0.5)  # every hanging exchange has reached the head
            assert await asyncio.wait_for(get("/ok"), timeout=5) == "ok"
            release.set()
            assert set(await asyncio.gather(*hanging)) == {"late"}
    finally:
        release.set()
        await runner.cleanup()
