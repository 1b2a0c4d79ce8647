"""A closed pass as the decision log keeps it: one ``bytes`` record.

A log keeps thousands of passes for as long as the process runs, whatever share of a fleet it
holds, so each one costs what a small bytes object costs: a fixed header (the times, the outcome,
the counters, the flags), the error's text, and the notes packed by the log's codec. As a Python
object with its floats, list and key tuple, a quiet pass cost about 0.44 KB kept; as a record,
about 0.26 KB with its key (traced, ``tests/runtime/test_decisions.py``).

The header is little-endian: started, last started, seconds, next in (NaN for none) as doubles;
retries, repeats, dropped notes, the error's length in bytes as unsigned ints; the outcome's
index in :data:`OUTCOMES` and the flags as one byte each.
"""

from __future__ import annotations

import math
import struct
from typing import Final, NamedTuple

OUTCOMES: Final[tuple[str, ...]] = (
    "done", "requeue", "requeue_after", "retry_after", "error", "terminal",
)  # fmt: skip
"""The outcomes a pass ends with, in the order their index is written."""

EVENTED: Final[int] = 1
"""Flag: the pass recorded an Event."""

ACTED: Final[int] = 2
"""Flag: the record is kept apart, among the passes that acted, not among the last ones."""

_HEADER = struct.Struct("<ddddIIIIBB")
_DOUBLE = struct.Struct("<d")
_COUNTER = struct.Struct("<I")
_LAST_STARTED_AT, _NEXT_IN_AT, _REPEATS_AT, _OUTCOME_AT, _FLAGS_AT = 8, 24, 36, 48, 49
_COUNTER_MAX = 2**32 - 1
_OUTCOME_INDEX: Final[dict[str, int]] = {outcome: i for i, outcome in enumerate(OUTCOMES)}


class Record(NamedTuple):
    """A record's fields, read back."""

    started: float
    last_started: float
    seconds: float
    next_in: float | None
    retries: int
    repeats: int
    dropped: int
    outcome: str
    flags: int
    error: str
    notes: bytes | None
    """The notes as the log's codec packed them (None when the pass noted nothing)."""


def pack(
    *,
    started: float,
    last_started: float,
    seconds: float,
    next_in: float | None,
    retries: int,
    repeats: int,
    dropped: int,
    outcome: str,
    flags: int,
    error: str,
    notes: bytes | None,
) -> bytes:
    """Returns the record of a pass (``notes`` already packed by the log's codec)."""
    error_bytes = error.encode()
    header = _HEADER.pack(
        started,
        last_started,
        seconds,
        math.nan if next_in is None else next_in,
        min(retries, _COUNTER_MAX),
        min(repeats, _COUNTER_MAX),
        min(dropped, _COUNTER_MAX),
        len(error_bytes),
        _OUTCOME_INDEX[outcome],
        flags,
    )
    return header + error_bytes + (notes or b"")


def unpack(record: bytes) -> Record:
    """Returns the fields of ``record``."""
    (started, last_started, seconds, next_in, retries, repeats, dropped, error_length, outcome,
     flags) = _HEADER.unpack_from(record)  # fmt: skip
    body = _HEADER.size + error_length
    return Record(
        started=started,
        last_started=last_started,
        seconds=seconds,
        next_in=None if math.isnan(next_in) else next_in,
        retries=retries,
        repeats=repeats,
        dropped=dropped,
        outcome=OUTCOMES[outcome],
        flags=flags,
        error=record[_HEADER.size : body].decode(),
        notes=record[body:] or None,
    )


def flags(record: bytes) -> int:
    """Returns the flags of ``record`` without reading the rest."""
    return record[_FLAGS_AT]


def quiet_alike(record: bytes, outcome: str, next_in: float | None) -> bool:
    """Tells whether ``record`` noted nothing, has no error and ended with ``outcome`` and
    ``next_in``: a quiet pass that ends so only repeats it. Reads only those fields (a quiet
    pass is the commonest, and this runs on each)."""
    if len(record) != _HEADER.size:  # an error's text or notes follow the header
        return False
    if record[_OUTCOME_AT] != _OUTCOME_INDEX[outcome]:
        return False
    (kept,) = _DOUBLE.unpack_from(record, _NEXT_IN_AT)
    return math.isnan(kept) if next_in is None else kept == next_in


def repeated(record: bytes, started: float) -> bytes:
    """Returns ``record`` with one more repeat, the last of which started at ``started``."""
    out = bytearray(record)
    _DOUBLE.pack_into(out, _LAST_STARTED_AT, started)
    (repeats,) = _COUNTER.unpack_from(record, _REPEATS_AT)
    _COUNTER.pack_into(out, _REPEATS_AT, min(repeats + 1, _COUNTER_MAX))
    return bytes(out)


def set_aside(record: bytes) -> bytes:
    """Returns ``record`` flagged as kept apart among the passes that acted."""
    return record[:_FLAGS_AT] + bytes((record[_FLAGS_AT] | ACTED,)) + record[_HEADER.size :]
