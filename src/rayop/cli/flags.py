"""Go-style flag values, so that KubeRay's Deployment arguments work unchanged.

Go's ``flag`` package accepts a bare boolean flag (``--enable-leader-election``) as true and
``--flag=false`` / ``--flag=true`` with an explicit value. :func:`normalize_argv` rewrites the bare
form of the boolean flags listed in :data:`BOOL_FLAGS` to ``--flag=true`` before typer parses it.
Go also takes one dash for a long flag (``-qps=50``); :func:`normalize_argv` gives KubeRay's flags
(:data:`GO_FLAGS`) their second dash, so ``-enable-leader-election`` works as KubeRay's does.
"""

from __future__ import annotations

from collections.abc import Sequence

import typer

BOOL_FLAGS = frozenset(
    {
        "--enable-leader-election",
        "--sharding",
        "--use-priority-queue",
        "--enable-metrics",
        "--forced-cluster-upgrade",
        "--use-kubernetes-proxy",
        "--enable-batch-scheduler",
        "--zap-devel",
    }
)

GO_FLAGS = frozenset(
    {
        "kubeconfig",
        "metrics-addr",
        "health-probe-bind-address",
        "enable-leader-election",
        "leader-election-namespace",
        "reconcile-concurrency",
        "watch-namespace",
        "forced-cluster-upgrade",
        "log-file-path",
        "log-file-encoder",
        "log-stdout-encoder",
        "enable-batch-scheduler",
        "batch-scheduler",
        "config",
        "use-kubernetes-proxy",
        "feature-gates",
        "enable-metrics",
        "qps",
        "burst",
        "zap-devel",
        "zap-encoder",
        "zap-log-level",
        "zap-stacktrace-level",
        "zap-time-encoding",
    }
)
"""KubeRay v1.7.0's flag names (its own and controller-runtime's), for the one-dash Go form."""

_TRUE = {"1", "t", "true", "yes", "on"}
_FALSE = {"0", "f", "false", "no", "off"}


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Returns ``argv`` with KubeRay's one-dash flags given two dashes (:data:`GO_FLAGS`) and
    each bare boolean flag in :data:`BOOL_FLAGS` given ``=true``."""
    return [_bare_bool(_two_dashes(arg)) for arg in argv]


def _two_dashes(arg: str) -> str:
    if arg.startswith("-") and not arg.startswith("--") and arg[1:].partition("=")[0] in GO_FLAGS:
        return "-" + arg
    return arg


def _bare_bool(arg: str) -> str:
    return f"{arg}=true" if arg in BOOL_FLAGS else arg


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
