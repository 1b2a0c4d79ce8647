"""``rayop advise``: should this running operator's --reconcile-concurrency change? Its metrics say."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import orjson
import typer

from rayop.cli.app import app


@app.command("advise")
def advise(
    metrics_url: Annotated[
        str,
        typer.Option(
            "--metrics-url",
            help="The operator's /metrics endpoint (rayop's or KubeRay's), e.g. "
            "http://127.0.0.1:8080/metrics.",
        ),
    ],
    window: Annotated[
        float, typer.Option(help="Seconds to read the endpoint for.", min=1.0)
    ] = 60.0,
    interval: Annotated[float, typer.Option(help="Seconds between two scrapes.", min=0.05)] = 2.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the advice as JSON.")] = False,
) -> None:
    """Read a running operator's metrics over a window and say, per controller, whether to raise,
    keep or lower --reconcile-concurrency, with the evidence."""
    from rayop.advise.advice import advise as make_advice
    from rayop.advise.endpoint import read_window
    from rayop.advise.errors import AdviseInputError
    from rayop.advise.report import render

    if interval > window:
        typer.echo(
            f"rayop advise: --interval {interval:g} is longer than --window {window:g}", err=True
        )
        sys.exit(2)
    try:
        operator, scrapes = asyncio.run(read_window(metrics_url, window=window, interval=interval))
    except AdviseInputError as exc:
        typer.echo(f"rayop advise: {exc}", err=True)
        sys.exit(2)
    advice = make_advice(operator, metrics_url, scrapes)
    if as_json:
        typer.echo(orjson.dumps(advice.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(render(advice), nl=False)
