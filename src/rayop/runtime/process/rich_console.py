"""rich's log handler, for the console format on a terminal: the only place rich is imported.

:func:`~rayop.runtime.process.logsetup.configure_logging` imports this module only when the
console format goes to a terminal, so an operator that logs JSON, or to a pipe or a file, never
loads rich (~15 ms of CPU and ~1.8 MiB at start-up).
"""

from __future__ import annotations

import logging
from typing import TextIO

from rich.console import Console
from rich.logging import RichHandler

__all__ = ["terminal_handler"]


def terminal_handler(out: TextIO) -> logging.Handler:
    """Returns rich's handler writing to the terminal ``out``: soft-wrapped, not highlighted,
    without the caller's path or rich's tracebacks."""
    console = Console(file=out, soft_wrap=True, highlight=False)
    return RichHandler(console=console, show_path=False, rich_tracebacks=False)
