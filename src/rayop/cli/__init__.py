"""The ``rayop`` command line. Each sub-command lives in a module of its own here and
registers itself on :data:`app`."""

from __future__ import annotations

import sys

from rayop.cli import apiserver as _apiserver  # noqa: F401  (registers `rayop apiserver`)
from rayop.cli import bench as _bench  # noqa: F401  (registers `rayop bench`)
from rayop.cli import crds as _crds  # noqa: F401  (registers `rayop crds`)
from rayop.cli import dev as _dev  # noqa: F401  (registers `rayop dev real-cluster`)
from rayop.cli import run as _run  # noqa: F401  (registers `rayop run`)
from rayop.cli import samples as _samples  # noqa: F401  (registers `rayop samples`)
from rayop.cli import up as _up  # noqa: F401  (registers `rayop up`)
from rayop.cli import version as _version  # noqa: F401  (registers `rayop version`)
from rayop.cli.app import app
from rayop.cli.flags import normalize_argv


def main() -> None:
    """Entry point of the ``rayop`` console script."""
    app(args=normalize_argv(sys.argv[1:]), prog_name="rayop")


__all__ = ["app", "main"]
