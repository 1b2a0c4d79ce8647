"""``rayop version``."""

from __future__ import annotations

import platform

import typer

from rayop import __version__
from rayop.cli.app import app


@app.command("version")
def version() -> None:
    """Print rayop's version and the Python it runs on."""
    typer.echo(f"rayop {__version__} (python {platform.python_version()})")
