"""Reads an operator's series from a Prometheus server's HTTP API over a time range.

What production has: history without waiting. One ``query_range`` call
(https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries) fetches the raw
controller-runtime, workqueue and REST client series of the operator that ``selector`` picks,
at every ``step`` of the range; each step becomes one scrape, so the window is read exactly as
if ``/metrics`` had been scraped at those times. Series of more than one scrape target (two
replicas, or two operators) are refused rather than added together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import Scrape
from rayop.advise.exposition import Labels, Snapshot
from rayop.advise.identity import Operator, identify

SERIES = "controller_runtime_.*|workqueue_.*|rest_client_.*|rayop_.*|go_info"
"""The series a verdict reads (``rayop_*`` and ``go_info`` only tell which operator it is)."""
TARGET_LABELS = ("job", "instance")
"""The labels Prometheus adds to every series it scrapes: one value pair is one operator."""


def query(selector: str) -> str:
    """Returns the PromQL selector of every series the verdict needs, narrowed by ``selector``.

    Args:
        selector: Label matchers without braces, e.g. ``job="rayop",namespace="ray-system"``
            (empty: every target).
    """
    extra = f",{selector}" if selector else ""
    return f'{{__name__=~"{SERIES}"{extra}}}'


def _result(body: bytes, url: str) -> list[Mapping[str, Any]]:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise AdviseInputError(
            f"{url} is not a Prometheus HTTP API (the answer is not JSON)"
        ) from exc
    if not isinstance(doc, dict) or "status" not in doc:
        raise AdviseInputError(f"{url} is not a Prometheus HTTP API (no status in the answer)")
    if doc["status"] != "success":
        raise AdviseInputError(
            f"Prometheus at {url} refused the query: {doc.get('errorType', '')} {doc.get('error', '')}"
        )
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise AdviseInputError(f"{url} answered a range query without a matrix result")
    result = data.get("result")
    if not isinstance(result, list):
        raise AdviseInputError(f"{url} answered a range query without a result list")
    return result


def snapshots(result: Sequence[Mapping[str, Any]], *, start: float, source: str) -> list[Scrape]:
    """Turns a matrix result into one scrape per timestamp, oldest first.

    Raises:
        AdviseInputError: the series come from more than one scrape target.
    """
    targets = {tuple(s["metric"].get(k, "") for k in TARGET_LABELS) for s in result}
    if len(targets) > 1:
        names = ", ".join(f"{j}/{i}" for j, i in sorted(targets))
        raise AdviseInputError(
            f"{source} holds the series of {len(targets)} scrape targets ({names}); narrow "
            '--selector to one (e.g. instance="...")'
        )
    by_time: dict[float, dict[tuple[str, Labels], float]] = {}
    for series in result:
        metric = dict(series["metric"])
        name = metric.pop("__name__")
        for k in TARGET_LABELS:
            metric.pop(k, None)
        key = (name, frozenset(metric.items()))
        for ts, value in series["values"]:
            by_time.setdefault(float(ts), {})[key] = float(value)
    return [Scrape(ts - start, Snapshot(samples)) for ts, samples in sorted(by_time.items())]


async def read_range(
    url: str,
    *,
    selector: str,
    start: float,
    end: float,
    step: float,
    timeout: float = 30.0,
) -> tuple[Operator, list[Scrape]]:
    """Reads the operator's series from Prometheus at ``url`` from ``start`` to ``end``.

    Args:
        url: The server's base URL, e.g. ``http://prometheus:9090``.
        selector: Label matchers picking one operator (see :func:`query`).
        start: Unix seconds.
        end: Unix seconds.
        step: Seconds between two points (the scrape interval is the finest that means anything).

    Raises:
        AdviseInputError: unreachable, not Prometheus, a refused query, no series, or the series
            of more than one target.
    """
    endpoint = url.rstrip("/") + "/api/v1/query_range"
    params = {
        "query": query(selector),
        "start": f"{start:.3f}",
        "end": f"{end:.3f}",
        "step": f"{step:g}",
    }
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(endpoint, params=params) as response,
        ):
            body = await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise AdviseInputError(f"cannot reach {url}: {exc or type(exc).__name__}") from exc
    if response.status >= 500 or response.status in (404, 405):
        raise AdviseInputError(
            f"{url} answered HTTP {response.status} to a range query: not Prometheus?"
        )
    result = _result(body, url)
    source = f"Prometheus at {url} ({query(selector)})"
    scrapes = snapshots(result, start=start, source=source)
    if len(scrapes) < 2:
        raise AdviseInputError(
            f"{source} has {len(scrapes)} point(s) in the range: no controller-runtime series "
            "there, or the range is shorter than one step"
        )
    return identify(scrapes[-1].snapshot, source=source), scrapes
