"""The logging that ``rayop run``'s logging flags resolve to, and setting it up.

:class:`LogPlan` is what :meth:`rayop.cli.kuberay_flags.KubeRayLogFlags.plan` resolves KubeRay's
and rayop's logging flags to (``--config`` may replace its file, :mod:`rayop.cli.kuberay_config`);
:func:`configure_logging` sets up the root logger from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import typer

__all__ = [
    "LOG_FILE_BACKUPS",
    "LOG_FILE_MAX_AGE_DAYS",
    "LOG_FILE_MAX_BYTES",
    "LogPlan",
    "configure_logging",
]

LOG_FILE_MAX_BYTES: Final = 500 * 1024 * 1024
"""KubeRay rotates ``--log-file-path`` at 500 MB (lumberjack ``MaxSize: 500``)."""
LOG_FILE_BACKUPS: Final = 10
"""KubeRay keeps 10 rotated files (lumberjack ``MaxBackups: 10``)."""
LOG_FILE_MAX_AGE_DAYS: Final = 30
"""KubeRay deletes rotated files older than 30 days (lumberjack ``MaxAge: 30``)."""


@dataclass(frozen=True)
class LogPlan:
    """The logging that KubeRay's and rayop's logging flags resolve to."""

    level: str
    """A ``rayop.runtime.process.logsetup`` level name."""
    stdout_format: str
    """``json`` or ``console``."""
    file_path: str | None
    """The rotated log file, if any."""
    file_format: str
    """``json`` or ``console``."""
    stacktrace_level: int | None
    """Records at or above it carry a stacktrace; None: only records with an exception."""


def configure_logging(plan: LogPlan) -> None:
    """Sets up the root logger as ``plan`` says (stdout, and the rotated file if any).

    Raises:
        typer.BadParameter: an unknown level, or the log file cannot be opened.
    """
    from rayop.runtime.process.log_rotation import DAY_SECONDS
    from rayop.runtime.process.logsetup import configure_logging as configure

    try:
        configure(
            plan.level,
            "json" if plan.stdout_format == "json" else "console",
            file_path=plan.file_path,
            file_format="json" if plan.file_format == "json" else "console",
            file_max_bytes=LOG_FILE_MAX_BYTES,
            file_backups=LOG_FILE_BACKUPS,
            file_max_age=LOG_FILE_MAX_AGE_DAYS * DAY_SECONDS,
            stacktrace_level=plan.stacktrace_level,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except OSError as exc:
        raise typer.BadParameter(f"--log-file-path {plan.file_path}: {exc}") from exc
