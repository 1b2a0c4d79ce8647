"""`rayop advise --metrics-url`: a live endpoint read over a window, and input it cannot use."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import orjson
import pytest
from aiohttp import web
from typer.testing import CliRunner

from rayop.advise.endpoint import read_window
from rayop.advise.errors import AdviseInputError
from rayop.cli.commands import loaded_app
from tests.advise.fluid_operator import FluidOperator, Load

app = loaded_app()

Page = Callable[[], tuple[int, str]]
Serve = Callable[[Page], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Serves pages at /metrics on a loopback port; returns a function giving the URL."""
    runners: list[web.AppRunner] = []

    async def start(page: Page) -> str:
        async def handler(_: web.Request) -> web.Response:
            status, body = page()
            return web.Response(status=status, text=body)

        app_ = web.Application()
        app_.router.add_get("/metrics", handler)
        runner = web.AppRunner(app_)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/metrics"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_a_live_endpoint_is_scraped_every_interval(serve: Serve) -> None:
    op = FluidOperator(workers=1)

    def page() -> tuple[int, str]:
        op.second(Load(arrivals=20))  # one model second per scrape
        return 200, op.metrics.render().decode()

    url = await serve(page)
    operator, scrapes = await read_window(url, window=0.2, interval=0.05)
    assert operator.name == "rayop"
    assert operator.controllers == ("raycluster",)
    assert len(scrapes) == 5
    assert [s.t for s in scrapes] == sorted(s.t for s in scrapes)


async def test_a_page_that_is_not_prometheus_is_refused(serve: Serve) -> None:
    url = await serve(lambda: (200, "<html><body>Welcome</body></html>"))
    with pytest.raises(AdviseInputError, match="is not a Prometheus text exposition"):
        await read_window(url, window=1, interval=1)


async def test_an_http_error_is_refused(serve: Serve) -> None:
    url = await serve(lambda: (404, "not found"))
    with pytest.raises(AdviseInputError, match="answered HTTP 404, not a metrics page"):
        await read_window(url, window=1, interval=1)


async def test_prometheus_without_controller_metrics_is_refused(
    serve: Serve,
) -> None:
    url = await serve(lambda: (200, 'python_info{version="3.11"} 1.0\n'))
    with pytest.raises(AdviseInputError, match="has no controller-runtime series"):
        await read_window(url, window=1, interval=1)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_endpoint_is_one_line_and_exit_2() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/metrics"
    result = CliRunner().invoke(
        app, ["advise", "--metrics-url", url, "--window", "1", "--interval", "1"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"rayop advise: cannot reach {url}")


def test_an_interval_longer_than_the_window_is_refused() -> None:
    result = CliRunner().invoke(
        app, ["advise", "--metrics-url", "http://x/metrics", "--window", "1", "--interval", "5"]
    )
    assert result.exit_code == 2
    assert "--interval 5 is longer than --window 1" in result.output


def test_json_output_carries_every_verdict() -> None:
    op = FluidOperator(workers=1)
    window = op.run([Load(arrivals=20)] * 10)
    from rayop.advise.advice import advise
    from rayop.advise.identity import identify

    doc = advise(identify(window[0].snapshot, source="m"), "m", window).to_json()
    encoded = orjson.loads(orjson.dumps(doc))
    assert encoded["operator"] == "rayop"
    assert encoded["controllers"][0]["verdict"] == "raise"
    assert encoded["api"]["verbs"][0]["verb"] == "GET"
