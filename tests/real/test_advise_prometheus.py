"""`rayop advise --prometheus` against a real Prometheus server scraping a live operator endpoint.

The endpoint serves the fluid model (rayop's own metric classes), advanced one model second per
wall second; Prometheus scrapes it every second; the advice read back from Prometheus' range
query must be the advice the endpoint itself gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from rayop.advise.advice import advise
from rayop.advise.errors import AdviseInputError
from rayop.advise.prometheus import read_range
from tests.advise.fluid_operator import FluidOperator, Load
from tests.real.prometheus_support import free_port, running_prometheus

pytestmark = pytest.mark.real

SECONDS = 24


@contextlib.asynccontextmanager
async def _live_model(op: FluidOperator, load: Load) -> AsyncIterator[str]:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=op.metrics.render(), content_type="text/plain")

    async def advance() -> None:
        while True:
            op.second(load)
            await asyncio.sleep(1.0)  # one model second per wall second, as Prometheus scrapes

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    ticker = asyncio.create_task(advance())
    try:
        yield f"127.0.0.1:{port}"
    finally:
        ticker.cancel()
        await runner.cleanup()


async def _ready(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(300):
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"{url}/-/ready") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
    raise AssertionError(f"Prometheus at {url} never became ready")


@pytest.mark.parametrize(
    ("load", "verdict", "next_limit"),
    [
        (Load(arrivals=20), ("raise", 2), "concurrency"),
        (Load(arrivals=20, throttle_seconds=0.2), ("keep", None), "qps"),
    ],
    ids=["saturated", "throttled"],
)
async def test_the_advice_read_from_prometheus_is_the_endpoints(
    load: Load, verdict: tuple[str, int | None], next_limit: str, tmp_path: Path
) -> None:
    op = FluidOperator(workers=1)
    async with _live_model(op, load) as target:
        with running_prometheus({"rayop": target}, tmp_path) as url:
            await _ready(url)
            start = time.time()
            await asyncio.sleep(SECONDS)
            end = time.time()
            operator, scrapes = await read_range(
                url, selector='job="rayop"', start=start, end=end, step=1.0
            )
            with pytest.raises(AdviseInputError, match="0 point\\(s\\) in the range"):
                await read_range(url, selector='job="nobody"', start=start, end=end, step=1.0)
    assert operator.name == "rayop"
    assert len(scrapes) >= SECONDS // 2  # Prometheus scrapes from a few seconds after ready
    (v,) = advise(operator, url, scrapes).verdicts
    assert ((v.action, v.to), v.next_limit) == (verdict, next_limit), v.reasons
