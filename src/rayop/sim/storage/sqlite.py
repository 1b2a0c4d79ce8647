"""SQLite persistence of the store: every acknowledged write is on disk before the response.

The database runs in WAL mode with ``synchronous=NORMAL``: a commit has reached the
operating system (the WAL file) when :meth:`SqlitePersistence.write` returns, so a SIGKILLed
server loses nothing it acknowledged (an OS crash may lose the last commits).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SqlitePersistence"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    key TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY (key, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
"""


class SqlitePersistence:
    """Stores objects in one SQLite file; implements the store's ``Persistence`` protocol.

    Args:
        path: The database file (created when missing).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def load(self) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
        """Returns the last committed RV and every stored ``(key, object)`` (blocks)."""
        row = self._db.execute("SELECT v FROM meta WHERE k = 'rv'").fetchone()
        rv = int(row[0]) if row else 0
        rows = [
            (str(key), orjson.loads(body))
            for key, body in self._db.execute("SELECT key, body FROM objects ORDER BY rv")
        ]
        return rv, rows

    def write(
        self, rv: int, key: str, namespace: str, name: str, obj: dict[str, Any] | None
    ) -> None:
        """Commits one object (or its removal when ``obj`` is None) and the new RV (blocks)."""
        db = self._db
        db.execute("BEGIN")
        try:
            if obj is None:
                db.execute(
                    "DELETE FROM objects WHERE key = ? AND namespace = ? AND name = ?",
                    (key, namespace, name),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO objects (key, namespace, name, rv, body) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, namespace, name, rv, orjson.dumps(obj)),
                )
            db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('rv', ?)", (rv,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Closes the database."""
        self._db.close()
