"""The bench reads an external operator through its /metrics URL: a scrape that fails or does not
answer in time is an error, never an empty snapshot (an empty final read once turned a 10,000
cluster run's reconciles into 0 and its requests into -26)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from rayop.bench.environment import ExternalOperator, MetricsUnavailable
from rayop.runtime.serving.endpoints import HttpServer
from rayop.testing import eventually

PAGE = (
    "# TYPE controller_runtime_max_concurrent_reconciles gauge\n"
    'controller_runtime_max_concurrent_reconciles{controller="raycluster"} 8.0\n'
    "# TYPE controller_runtime_reconcile_total counter\n"
    'controller_runtime_reconcile_total{controller="raycluster",result="success"} 3.0\n'
)


class Endpoint:
    """A /metrics endpoint whose answers the test switches: the page, an HTTP error, or none."""

    def __init__(self) -> None:
        self.mode = "page"
        self.hold = asyncio.Event()
        self.errors = 0
        """Scrapes answered with an HTTP error."""
        self.stalls = 0
        """Scrapes that reached the stalled handler."""

    async def metrics(self, _request: web.Request) -> web.Response:
        if self.mode == "error":
            self.errors += 1
            return web.Response(status=500, text="boom")
        if self.mode == "stall":
            self.stalls += 1
            await self.hold.wait()
        return web.Response(text=PAGE)


Serve = Callable[[Endpoint], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[tuple[HttpServer, Endpoint]] = []

    async def start(endpoint: Endpoint) -> str:
        app = web.Application()
        app.router.add_get("/metrics", endpoint.metrics)
        server = HttpServer(app, "127.0.0.1", 0)
        await server.start()
        servers.append((server, endpoint))
        return f"http://127.0.0.1:{server.port}/metrics"

    yield start
    for server, endpoint in servers:
        endpoint.hold.set()
        await server.stop()


async def test_a_readable_page_is_parsed(serve: Serve) -> None:
    url = await serve(Endpoint())
    async with ExternalOperator(url) as operator:
        assert operator.controller == "raycluster"
        snap = await operator.snapshot()
    assert snap.by_label("controller_runtime_reconcile_total", "result") == {"success": 3.0}


async def test_an_http_error_raises_instead_of_an_empty_snapshot(serve: Serve) -> None:
    endpoint = Endpoint()
    url = await serve(endpoint)
    async with ExternalOperator(url) as operator:
        endpoint.mode = "error"
        with pytest.raises(MetricsUnavailable, match="answered 500"):
            await operator.snapshot()


async def test_a_scrape_past_its_timeout_raises_and_a_slow_one_within_it_is_read(
    serve: Serve,
) -> None:
    endpoint = Endpoint()
    url = await serve(endpoint)
    async with ExternalOperator(url, scrape_timeout=0.2) as operator:
        endpoint.mode = "stall"
        with pytest.raises(MetricsUnavailable, match=r"could not be read in 0\.2 s"):
            await operator.snapshot()
        late = asyncio.create_task(operator.snapshot())
        await eventually(lambda: endpoint.stalls == 2, what="the scrape waits on the handler")
        endpoint.hold.set()
        snap = await late
    assert snap.by_label("controller_runtime_reconcile_total", "result") == {"success": 3.0}


async def test_an_operator_still_starting_is_waited_for(serve: Serve) -> None:
    endpoint = Endpoint()
    endpoint.mode = "error"
    url = await serve(endpoint)

    async def come_up() -> None:
        await eventually(lambda: endpoint.errors >= 1, what="a scrape refused")
        endpoint.mode = "page"

    starting = asyncio.create_task(come_up())
    async with ExternalOperator(url, ready_timeout=10.0) as operator:
        assert operator.controller == "raycluster"
    await starting
