"""``rayop advise``: should this running operator's --reconcile-concurrency change? Its metrics say."""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import datetime
from pathlib import Path
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
    save: Annotated[
        Path | None,
        typer.Option(help="Also write the window read to this file (a --before for later)."),
    ] = None,
    before: Annotated[
        Path | None,
        typer.Option(
            help="Compare the window read now with this one, saved by --save before a change: "
            "keep or revert."
        ),
    ] = None,
    before_start: Annotated[
        str | None,
        typer.Option(help="With --prometheus: the window before the change starts here."),
    ] = None,
    before_end: Annotated[
        str | None,
        typer.Option(help="With --prometheus: the window before the change ends here."),
    ] = None,
    after: Annotated[
        Path | None,
        typer.Option(
            help="With --before: compare against this saved window instead of reading one "
            "(both written by --save or `rayop bench --advise-windows`).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the advice as JSON.")] = False,
) -> None:
    """Read a running operator's metrics (its /metrics endpoint over a window, or its history in
    Prometheus) and say, per controller, whether to raise, keep or lower --reconcile-concurrency,
    with the evidence."""
    from rayop.advise.advice import advise as make_advice
    from rayop.advise.compare import compare
    from rayop.advise.endpoint import read_window
    from rayop.advise.errors import AdviseInputError
    from rayop.advise.prometheus import read_range
    from rayop.advise.report import render, render_comparison
    from rayop.advise.window_file import load
    from rayop.advise.window_file import save as save_window

    if after is not None:
        if metrics_url is not None or prometheus is not None:
            _fail("--after reads a saved window: give it instead of --metrics-url/--prometheus")
        if before is None:
            _fail("--after needs --before (the window to compare it with)")
    elif (metrics_url is None) == (prometheus is None):
        _fail("give exactly one of --metrics-url and --prometheus (or --before and --after)")
    if (before_start is None) != (before_end is None):
        _fail("give both --before-start and --before-end")
    if before_start is not None and (prometheus is None or before is not None):
        _fail("--before-start/--before-end go with --prometheus, instead of --before")
    read: tuple[Operator, list[Scrape]]
    earlier: list[Scrape] | None = None
    try:
        if before is not None:
            earlier = load(before)[2]
        if after is not None:
            saved_operator, source, saved = load(after, flag="--after")
            read = (saved_operator, saved)
        elif metrics_url is not None:
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
            if before_start is not None and before_end is not None:
                b0 = parse_time(before_start, flag="--before-start")
                b1 = parse_time(before_end, flag="--before-end")
                earlier = asyncio.run(
                    read_range(prometheus, selector=selector, start=b0, end=b1, step=step)
                )[1]
        advice = make_advice(read[0], source, read[1])
        comparison = None if earlier is None else compare(earlier, read[1], read[0].controllers)
    except AdviseInputError as exc:
        _fail(str(exc))
        raise
    if save is not None:
        save_window(save, read[0], source, read[1])
    if as_json:
        doc = advice.to_json()
        if comparison is not None:
            doc["comparison"] = comparison.to_json()
        typer.echo(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    else:
        text = render(advice)
        if comparison is not None:
            text += "\n" + render_comparison(comparison)
        typer.echo(text, nl=False)
