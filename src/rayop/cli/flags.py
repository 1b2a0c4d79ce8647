"""Go-style flag values, so that KubeRay's Deployment arguments work unchanged.

Go's ``flag`` package accepts a bare boolean flag (``--enable-leader-election``) as true and
``--flag=false`` / ``--flag=true`` with an explicit value. :func:`normalize_argv` rewrites the bare
form of the boolean flags listed in :data:`BOOL_FLAGS` to ``--flag=true`` before typer parses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import typer

BOOL_FLAGS = frozenset(
    {
        "--enable-leader-election",
        "--use-priority-queue",
        "--enable-metrics",
        "--forced-cluster-upgrade",
        "--use-kubernetes-proxy",
        "--enable-batch-scheduler",
        "--zap-devel",
    }
)

_TRUE = {"1", "t", "true", "yes", "on"}
_FALSE = {"0", "f", "false", "no", "off"}


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Returns ``argv`` with each bare boolean flag in :data:`BOOL_FLAGS` given ``=true``."""
    return [f"{arg}=true" if arg in BOOL_FLAGS else arg for arg in argv]


def parse_bool(value: str, *, flag: str) -> bool:
    """Parses a Go-style boolean flag value.

    Raises:
        typer.BadParameter: the value is not a boolean.
    """
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise typer.BadParameter(f"{flag} expects true or false, got {value!r}")


def parse_namespaces(value: str) -> tuple[str, ...]:
    """Parses ``--watch-namespace``: a comma-separated list; empty means all namespaces."""
    return tuple(ns.strip() for ns in value.split(",") if ns.strip())
