"""A recorded window on disk (``rayop advise --save``), to compare a later window against.

JSON: the operator, where it was read, and every scrape's samples as ``[name, labels, value]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import Scrape
from rayop.advise.exposition import Snapshot
from rayop.advise.identity import Operator

FORMAT = "rayop-advise-window/v1"


def save(path: Path, operator: Operator, source: str, window: list[Scrape]) -> None:
    """Writes ``window`` to ``path``."""
    doc = {
        "format": FORMAT,
        "operator": operator.name,
        "controllers": list(operator.controllers),
        "source": source,
        "scrapes": [
            {
                "t": s.t,
                "samples": [[n, dict(labels), v] for (n, labels), v in s.snapshot.samples.items()],
            }
            for s in window
        ],
    }
    path.write_bytes(orjson.dumps(doc))


def load(path: Path, *, flag: str = "--before") -> tuple[Operator, str, list[Scrape]]:
    """Reads a window written by :func:`save` (``flag`` names the option in errors).

    Raises:
        AdviseInputError: the file is missing or is not a saved window.
    """
    try:
        doc: Any = orjson.loads(path.read_bytes())
    except FileNotFoundError as exc:
        raise AdviseInputError(f"{flag} {path}: no such file") from exc
    except orjson.JSONDecodeError as exc:
        raise AdviseInputError(f"{flag} {path}: not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise AdviseInputError(f"{flag} {path}: not a window saved by rayop advise --save")
    scrapes = [
        Scrape(
            float(s["t"]),
            Snapshot({(n, frozenset(labels.items())): float(v) for n, labels, v in s["samples"]}),
        )
        for s in doc["scrapes"]
    ]
    return Operator(doc["operator"], tuple(doc["controllers"])), doc["source"], scrapes
