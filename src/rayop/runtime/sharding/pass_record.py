"""A record of every reconcile pass a replica ran: :class:`PassRecord`, one JSON line per pass.

Each line is ``{"replica", "controller", "key", "start", "end"}`` (``key`` is
``namespace/name``; times are wall-clock seconds), written when the pass ends. A benchmark
merges the files of every replica and checks, with :func:`overlaps`, that no two replicas ever
reconciled one key at the same time: the claim is read from the record, not assumed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True, slots=True)
class Pass:
    """One reconcile pass."""

    replica: str
    controller: str
    key: str
    start: float
    end: float


class PassRecord:
    """Appends passes to a JSON-lines file (line-buffered, so a killed replica loses at most
    the pass it was writing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8", buffering=1)

    def write(self, done: Pass) -> None:
        """Appends one pass; never blocks for long (a local file write)."""
        if self._file is not None:
            line = {
                "replica": done.replica,
                "controller": done.controller,
                "key": done.key,
                "start": done.start,
                "end": done.end,
            }
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self) -> None:
        """Closes the file; later writes are dropped."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_passes(paths: Iterable[str | Path]) -> Iterator[Pass]:
    """Yields every pass recorded in ``paths`` (a torn last line is skipped)."""
    for path in paths:
        with Path(path).open(encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                yield Pass(
                    str(row["replica"]),
                    str(row["controller"]),
                    str(row["key"]),
                    float(row["start"]),
                    float(row["end"]),
                )


def overlaps(passes: Iterable[Pass]) -> list[tuple[Pass, Pass]]:
    """Returns the pairs of passes of one controller and key, by two replicas, that overlap."""
    by_key: dict[tuple[str, str], list[Pass]] = {}
    for p in passes:
        by_key.setdefault((p.controller, p.key), []).append(p)
    found: list[tuple[Pass, Pass]] = []
    for runs in by_key.values():
        runs.sort(key=lambda p: p.start)
        latest: Pass | None = None
        for p in runs:
            if latest is not None and p.start < latest.end and p.replica != latest.replica:
                found.append((latest, p))
            if latest is None or p.end > latest.end:
                latest = p
    return found
