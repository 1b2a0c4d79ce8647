"""``rayop up --kubeconfig-out``: the kubeconfig file appears whole, and only when it is usable.

:func:`write_atomically` writes a file under a temporary name in the same directory (mode 0600)
and renames it into place, so a reader sees either no file (or the one it replaces) or the
whole new one. :class:`PublishedFile` remembers whether it wrote its file, so that a start that
fails removes only what it wrote.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["PublishedFile", "write_atomically"]


def write_atomically(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` (mode 0600) through a temporary file and a rename.

    Raises:
        OSError: the directory cannot be created or written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:  # mkstemp makes it 0600
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


class PublishedFile:
    """A file this process publishes once (:meth:`publish`) and may take back (:meth:`withdraw`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.published = False

    def publish(self, text: str) -> None:
        """Writes the file atomically (see :func:`write_atomically`).

        Raises:
            OSError: it cannot be written.
        """
        write_atomically(self.path, text)
        self.published = True

    def withdraw(self) -> None:
        """Removes the file if :meth:`publish` wrote it; a file it did not write stays."""
        if self.published:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.published = False
