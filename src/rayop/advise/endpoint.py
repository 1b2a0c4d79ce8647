"""Reads an operator's ``/metrics`` endpoint over a window: a scrape every interval.

Works with nothing else installed: the operator's own Prometheus text page is read directly,
``--window`` long, every ``--interval`` (gauges such as busy workers are only seen at scrape
times, so the interval sets how finely saturation is measured).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp

from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import Scrape
from rayop.advise.exposition import Snapshot
from rayop.advise.identity import Operator, identify

Sleep = Callable[[float], Awaitable[None]]


async def scrape(session: aiohttp.ClientSession, url: str) -> Snapshot:
    """Reads one page of ``url``.

    Raises:
        AdviseInputError: unreachable, an HTTP error, or not a Prometheus text exposition.
    """
    try:
        async with session.get(url) as response:
            body = await response.text()
            if response.status != 200:
                raise AdviseInputError(f"{url} answered HTTP {response.status}, not a metrics page")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise AdviseInputError(f"cannot reach {url}: {exc or type(exc).__name__}") from exc
    try:
        snapshot = Snapshot.from_text(body)
    except ValueError as exc:
        raise AdviseInputError(
            f"{url} is not a Prometheus text exposition ({str(exc)[:80]})"
        ) from exc
    if not snapshot.samples:
        raise AdviseInputError(f"{url} answered an empty page: no metrics")
    return snapshot


async def read_window(
    url: str,
    *,
    window: float,
    interval: float,
    sleep: Sleep = asyncio.sleep,
    timeout: float = 10.0,
) -> tuple[Operator, list[Scrape]]:
    """Scrapes ``url`` every ``interval`` seconds for ``window`` seconds.

    The first scrape tells which operator it is, so a wrong URL fails at once rather than after
    the window.

    Raises:
        AdviseInputError: see :func:`scrape` and :func:`rayop.advise.identity.identify`.
    """
    loop = asyncio.get_running_loop()
    steps = max(2, round(window / interval) + 1)
    scrapes: list[Scrape] = []
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(timeout=client_timeout) as session:
        started = loop.time()
        first = await scrape(session, url)
        operator = identify(first, source=url)
        scrapes.append(Scrape(0.0, first))
        for step in range(1, steps):
            await sleep(max(0.0, started + step * interval - loop.time()))
            page = await scrape(session, url)
            scrapes.append(Scrape(loop.time() - started, page))
    return operator, scrapes
