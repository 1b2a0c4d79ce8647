"""Configures the operator's logs: structured JSON lines or a readable console format.

Every record is enriched, at emit time, with the reconcile it belongs to: the ``controller``
name, the request's ``namespace`` and ``name`` and the ``reconcileID``, read from the
context variables the controller sets around each reconcile
(:mod:`rayop.runtime.reconcile`). Outside a reconcile those fields are absent.

A JSON line has the keys ``ts`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``,
``caller`` (``package/file.py:line`` of the logging call, in zap's short-caller form
``package/file.go:line``; controller-runtime's own lines have none, as it builds its zap
logger without ``AddCaller``) and ``msg``, then the reconcile fields, then anything passed
through ``extra=``, then ``error`` and ``stacktrace`` when the record carries an exception. Names
follow controller-runtime's zap output (``reconcileID``, ``controller``), so log queries written
for controller-runtime operators keep working.

The console format is rich's on a terminal. Anywhere else (a pipe, a file) it is one record a
line, ``ts<TAB>LEVEL<TAB>logger: msg  key=value...``, never cut to a terminal's width.

A second destination, a log file, is optional (``--log-file-path``): info and above,
in either format, rotated at ``file_max_bytes`` with ``file_backups`` old files kept and rotated
files older than ``file_max_age`` deleted (:mod:`rayop.runtime.process.log_rotation`). With a
``stacktrace_level``, every record at or above it carries a ``stacktrace`` (the exception's, or
the stack of the logging call), as zap's ``StacktraceLevel`` does.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from datetime import UTC, datetime
from typing import Any, Final, Literal, TextIO

import orjson

from rayop.runtime.process.log_rotation import DAY_SECONDS, AgedRotatingFileHandler
from rayop.runtime.reconcile import current_controller, current_reconcile_id, current_request

__all__ = [
    "LEVELS",
    "LogFormat",
    "ReconcileContextFilter",
    "StacktraceFilter",
    "caller",
    "configure_logging",
    "format_console",
    "format_file_console",
    "format_json",
    "parse_level",
]

LogFormat = Literal["json", "console"]
"""The two log formats of ``--log-format``."""

LEVELS: Final[dict[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
"""The accepted ``--log-level`` values (zap's names, plus Python's ``warning`` and ``critical``,
which is what zap's ``panic`` level keeps)."""

CONTEXT_FIELDS: Final[tuple[str, ...]] = ("controller", "namespace", "name", "reconcileID")
"""The reconcile-scoped fields, in the order they are written."""

_STANDARD_ATTRS: Final[frozenset[str]] = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None))
) | {"message", "asctime", "taskName", "rayop_context"}

_HANDLER_MARK: Final[str] = "_rayop_handler"


class StacktraceFilter(logging.Filter):
    """Gives each record at or above ``level`` without an exception the stack of its call."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        """Adds ``stack_info`` where zap would add a stacktrace; never drops a record."""
        if record.levelno >= self.level and not record.exc_info and not record.stack_info:
            frames = traceback.format_stack()
            record.stack_info = "".join(f for f in frames if "/logging/" not in f).rstrip()
        return True


class ReconcileContextFilter(logging.Filter):
    """Attaches the current reconcile's fields to each record as ``record.rayop_context``.

    Runs in the emitting task, so it sees that task's context variables. Never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Stores the reconcile fields (an empty dict outside a reconcile) and keeps the record."""
        context: dict[str, str] = {}
        controller = current_controller.get()
        if controller is not None:
            context["controller"] = controller
        request = current_request.get()
        if request is not None:
            context["namespace"] = request.namespace
            context["name"] = request.name
        reconcile_id = current_reconcile_id.get()
        if reconcile_id is not None:
            context["reconcileID"] = reconcile_id
        record.rayop_context = context
        return True


def _context(record: logging.LogRecord) -> dict[str, str]:
    context = getattr(record, "rayop_context", None)
    return context if isinstance(context, dict) else {}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS}


def _level_name(record: logging.LogRecord) -> str:
    return "warn" if record.levelno == logging.WARNING else record.levelname.lower()


def caller(record: logging.LogRecord) -> str:
    """Returns where ``record`` was logged as ``package/file.py:line`` (zap's short caller)."""
    folder = os.path.basename(os.path.dirname(record.pathname))
    name = os.path.basename(record.pathname)
    return f"{folder}/{name}:{record.lineno}" if folder else f"{name}:{record.lineno}"


def format_json(record: logging.LogRecord) -> str:
    """Returns ``record`` as one JSON object on one line (no trailing newline)."""
    # Real time on purpose: a log line is stamped when it was written, whatever clock drives
    # the code that wrote it.
    ts = datetime.fromtimestamp(record.created, tz=UTC)
    line: dict[str, Any] = {
        "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": _level_name(record),
        "logger": record.name,
        "caller": caller(record),
        "msg": record.getMessage(),
    }
    line.update(_context(record))
    for key, value in _extras(record).items():
        line.setdefault(key, value)
    if record.exc_info and record.exc_info[1] is not None:
        line["error"] = str(record.exc_info[1]) or type(record.exc_info[1]).__name__
        line["stacktrace"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
    elif record.stack_info:
        line["stacktrace"] = record.stack_info
    return orjson.dumps(line, default=str).decode()


def format_console(record: logging.LogRecord) -> str:
    """Returns the message followed by ``key=value`` pairs for the reconcile fields and extras."""
    pairs = {**_context(record), **_extras(record)}
    text = record.getMessage()
    if pairs:
        text += "  " + " ".join(f"{k}={v}" for k, v in pairs.items())
    return f"{record.name}: {text}"


def format_file_console(record: logging.LogRecord) -> str:
    """Returns a console line for a log file: time, level, then :func:`format_console`."""
    ts = datetime.fromtimestamp(record.created, tz=UTC)
    ts_text = ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    line = f"{ts_text}\t{_level_name(record).upper()}\t{format_console(record)}"
    if record.exc_info and record.exc_info[1] is not None:
        line += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
    elif record.stack_info:
        line += "\n" + record.stack_info
    return line


class _FileConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return format_file_console(record)


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return format_json(record)


class _ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return format_console(record)


def parse_level(level: str) -> int:
    """Returns the ``logging`` level for a ``--log-level`` value (case-insensitive).

    Raises:
        ValueError: ``level`` is not one of :data:`LEVELS`.
    """
    try:
        return LEVELS[level.strip().lower()]
    except KeyError:
        choices = ", ".join(sorted(LEVELS))
        raise ValueError(f"unknown log level {level!r} (choose from {choices})") from None


def configure_logging(
    level: str = "info",
    fmt: LogFormat = "json",
    *,
    stream: TextIO | None = None,
    file_path: str | None = None,
    file_format: LogFormat = "json",
    file_max_bytes: int = 500 * 1024 * 1024,
    file_backups: int = 10,
    file_max_age: float | None = 30 * DAY_SECONDS,
    stacktrace_level: int | None = None,
) -> logging.Handler:
    """Routes every log record to one handler on the root logger; never blocks.

    Replaces the handler a previous call installed (other handlers are left alone), so it may
    be called again to change the level or format.

    Args:
        level: ``debug``, ``info``, ``warn``/``warning`` or ``error``.
        fmt: ``json`` for one JSON object per line, ``console`` for human-readable lines (rich's
            on a terminal, one record a line elsewhere).
        stream: Where logs go; default: standard error.
        file_path: Also write info-and-above records to this file, rotated by size.
        file_format: The file's format, ``json`` or ``console``.
        file_max_bytes: Size at which the file is rotated.
        file_backups: How many rotated files are kept.
        file_max_age: Seconds after which a rotated file is deleted; None keeps them.
        stacktrace_level: Records at or above it carry a stacktrace; None: only exceptions.

    Returns:
        The installed handler (the stream's).

    Raises:
        ValueError: Unknown ``level``, ``fmt`` or ``file_format``.
        OSError: The log file cannot be opened.
    """
    numeric = parse_level(level)
    out = stream if stream is not None else sys.stderr
    handler: logging.Handler
    if fmt == "json":
        handler = logging.StreamHandler(out)
        handler.setFormatter(_JsonFormatter())
    elif fmt == "console" and _is_terminal(out):
        from rayop.runtime.process.rich_console import terminal_handler  # rich only here

        handler = terminal_handler(out)
        handler.setFormatter(_ConsoleFormatter())
    elif fmt == "console":
        handler = logging.StreamHandler(out)
        handler.setFormatter(_FileConsoleFormatter())
    else:
        raise ValueError(f"unknown log format {fmt!r} (choose from json, console)")
    handlers: list[logging.Handler] = [handler]
    if file_path is not None:
        handlers.append(
            _file_handler(file_path, file_format, file_max_bytes, file_backups, file_max_age)
        )
    for installed in handlers:
        installed.addFilter(ReconcileContextFilter())
        if stacktrace_level is not None:
            installed.addFilter(StacktraceFilter(stacktrace_level))
        setattr(installed, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    for installed in handlers:
        root.addHandler(installed)
    handler.setLevel(numeric)
    root.setLevel(min(numeric, logging.INFO) if file_path is not None else numeric)
    return handler


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _file_handler(
    path: str, fmt: LogFormat, max_bytes: int, backups: int, max_age: float | None
) -> logging.Handler:
    """A size- and age-rotated file handler for info and above, whatever the stream's level."""
    if fmt not in ("json", "console"):
        raise ValueError(f"unknown log format {fmt!r} (choose from json, console)")
    handler = AgedRotatingFileHandler(path, max_bytes=max_bytes, backups=backups, max_age=max_age)
    handler.setLevel(logging.INFO)
    handler.setFormatter(_JsonFormatter() if fmt == "json" else _FileConsoleFormatter())
    return handler
