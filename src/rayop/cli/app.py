"""The typer application every ``rayop`` sub-command registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="rayop",
    help="rayop: the KubeRay operator in Python, with an embedded Kubernetes control plane.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """rayop: the KubeRay operator in Python, with an embedded Kubernetes control plane."""
