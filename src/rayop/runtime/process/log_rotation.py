"""A size-rotated log file whose rotated files are deleted when too old.

It behaves as lumberjack (the rotating writer Go operators give zap; its ``MaxSize``,
``MaxBackups`` and ``MaxAge``): the age check runs when the file is first opened and after every
rotation, never on a timer. A rotated file's age is counted from when it was rotated out, as
lumberjack's, which writes that time into the rotated file's name: here it is the file's
modification time, set at rotation.
"""

from __future__ import annotations

import contextlib
import logging.handlers
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["DAY_SECONDS", "AgedRotatingFileHandler"]

DAY_SECONDS: Final = 24 * 60 * 60
"""Seconds in one of lumberjack's ``MaxAge`` days."""


class AgedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Rotates at ``max_bytes``, keeps ``backups`` rotated files, drops those over ``max_age``.

    Args:
        path: The log file; its rotated files are ``path.1`` (newest) to ``path.<backups>``.
        max_bytes: Size at which the file is rotated.
        backups: How many rotated files are kept at most.
        max_age: Seconds after which a rotated file is deleted; None keeps them regardless.
        clock: Wall-clock seconds since the epoch (tests pass a fixed one).

    Raises:
        OSError: The log file cannot be opened.
    """

    def __init__(
        self,
        path: str,
        *,
        max_bytes: int,
        backups: int,
        max_age: float | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self.max_age = max_age
        self._clock = clock
        self.delete_expired()

    def doRollover(self) -> None:
        """Rotates the file, stamps the rotated file with now, deletes those that are too old."""
        super().doRollover()
        newest = f"{self.baseFilename}.1"
        if self.backupCount > 0 and os.path.exists(newest):
            now = self._clock()
            os.utime(newest, (now, now))
        self.delete_expired()

    def rotated_files(self) -> list[Path]:
        """The rotated files that exist, newest first."""
        candidates = (Path(f"{self.baseFilename}.{n}") for n in range(1, self.backupCount + 1))
        return [path for path in candidates if path.exists()]

    def delete_expired(self) -> list[Path]:
        """Deletes the rotated files last written more than ``max_age`` ago; returns them."""
        if self.max_age is None:
            return []
        cutoff = self._clock() - self.max_age
        deleted: list[Path] = []
        for path in self.rotated_files():
            with contextlib.suppress(FileNotFoundError):
                if os.stat(path).st_mtime < cutoff:
                    path.unlink()
                    deleted.append(path)
        return deleted
