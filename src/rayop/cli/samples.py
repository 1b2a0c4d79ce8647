"""``rayop samples``: list the shipped example manifests, print one, or write them all out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rayop.cli.app import app
from rayop.examples import SAMPLES, sample_text


@app.command("samples")
def samples(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Samples to print (one YAML stream); none lists them."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write every sample (or the named ones) into this directory."),
    ] = None,
) -> None:
    """Print example manifests: `rayop samples rayjob | kubectl apply -f -`."""
    known = {s.name: s for s in SAMPLES}
    chosen = names or []
    unknown = [n for n in chosen if n not in known]
    if unknown:
        typer.echo(
            f"rayop samples: no sample named {', '.join(unknown)}; choose from {', '.join(known)}",
            err=True,
        )
        raise typer.Exit(2)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for name in chosen or list(known):
            path = out / known[name].filename
            path.write_text(sample_text(name))
            typer.echo(str(path))
        return
    if not chosen:
        width = max(len(n) for n in known)
        for sample in SAMPLES:
            typer.echo(f"{sample.name:<{width}}  {sample.summary}")
        typer.echo(
            "\nPrint one with `rayop samples NAME` (e.g. `rayop samples rayjob | kubectl apply -f -`)."
        )
        return
    typer.echo("---\n".join(sample_text(n) for n in chosen), nl=False)
