"""``rayop advise``: should this running operator's --reconcile-concurrency change? Its metrics say."""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import orjson
import typer

from rayop.cli.app import app

if TYPE_CHECKING:
    from rayop.advise.evidence import Scrape
    from rayop.advise.identity import Operator


def _fail(message: str) -> None:
    typer.echo(f"rayop advise: {message}", err=True)
    sys.exit(2)


def parse_time(value: str, *, flag: str) -> float:
    """Returns Unix seconds from RFC 3339 or Unix seconds; exits 2 naming ``flag`` otherwise."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        _fail(f"{flag} {value!r} is neither RFC 3339 (2026-12-04T12:00:00Z) nor Unix seconds")
        raise
    if parsed.tzinfo is None:
        _fail(f"{flag} {value!r} has no time zone (end it with Z or +00:00)")
    return parsed.timestamp()


def _range(since: float | None, start: str | None, end: str | None) -> tuple[float, float]:
    if since is not None and (start or end):
        _fail("give --since or --start/--end, not both")
    if since is not None:
        now = time.time()
        return now - since, now
    if not (start and end):
        _fail("--prometheus needs --since SECONDS, or --start and --end")
    assert start is not None and end is not None
    first, last = parse_time(start, flag="--start"), parse_time(end, flag="--end")
    if last <= first:
        _fail(f"--end {end} is not after --start {start}")
    return first, last


@app.command("advise")
def advise(
    metrics_url: Annotated[
        str | None,
        typer.Option(
            "--metrics-url",
            help="Read this /metrics endpoint (rayop's or KubeRay's) over --window, e.g. "
            "http://127.0.0.1:8080/metrics.",
        ),
    ] = None,
    window: Annotated[
        float, typer.Option(help="Seconds to read --metrics-url for.", min=1.0)
    ] = 60.0,
    interval: Annotated[
        float, typer.Option(help="Seconds between two scrapes of --metrics-url.", min=0.05)
    ] = 2.0,
    prometheus: Annotated[
        str | None,
        typer.Option(help="Read the operator's history from this Prometheus server instead."),
    ] = None,
    selector: Annotated[
        str,
        typer.Option(
            help='PromQL label matchers picking one operator, e.g. job="kuberay-operator".'
        ),
    ] = "",
    since: Annotated[
        float | None, typer.Option(help="With --prometheus: the last SECONDS up to now.", min=1.0)
    ] = None,
    start: Annotated[
        str | None, typer.Option(help="With --prometheus: range start (RFC 3339 or Unix seconds).")
    ] = None,
    end: Annotated[
        str | None, typer.Option(help="With --prometheus: range end (RFC 3339 or Unix seconds).")
    ] = None,
    step: Annotated[
        float, typer.Option(help="With --prometheus: seconds between two points.", min=1.0)
    ] = 15.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the advice as JSON.")] = False,
) -> None:
    """Read a running operator's metrics (its /metrics endpoint over a window, or its history in
    Prometheus) and say, per controller, whether to raise, keep or lower --reconcile-concurrency,
    with the evidence."""
    from rayop.advise.advice import advise as make_advice
    from rayop.advise.endpoint import read_window
    from rayop.advise.errors import AdviseInputError
    from rayop.advise.prometheus import read_range
    from rayop.advise.report import render

    if (metrics_url is None) == (prometheus is None):
        _fail("give exactly one of --metrics-url and --prometheus")
    read: tuple[Operator, list[Scrape]]
    try:
        if metrics_url is not None:
            if interval > window:
                _fail(f"--interval {interval:g} is longer than --window {window:g}")
            source = metrics_url
            read = asyncio.run(read_window(metrics_url, window=window, interval=interval))
        else:
            assert prometheus is not None
            first, last = _range(since, start, end)
            source = f"{prometheus} {{{selector}}}" if selector else prometheus
            read = asyncio.run(
                read_range(prometheus, selector=selector, start=first, end=last, step=step)
            )
    except AdviseInputError as exc:
        _fail(str(exc))
        raise
    advice = make_advice(read[0], source, read[1])
    if as_json:
        typer.echo(orjson.dumps(advice.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(render(advice), nl=False)
