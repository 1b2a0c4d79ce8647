"""The ``rayop`` command line. Each sub-command lives in a module of its own here and
registers itself on :data:`app`."""

from __future__ import annotations

from rayop.cli import apiserver as _apiserver  # noqa: F401  (registers `rayop apiserver`)
from rayop.cli import crds as _crds  # noqa: F401  (registers `rayop crds`)
from rayop.cli import version as _version  # noqa: F401  (registers `rayop version`)
from rayop.cli.app import app


def main() -> None:
    """Entry point of the ``rayop`` console script."""
    app()


__all__ = ["app", "main"]
