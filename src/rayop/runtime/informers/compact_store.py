"""Compact encoding of cached objects: orjson bytes deflated against learned dictionaries.

An informer may hold tens of thousands of objects that are nearly identical (the pods of one
workload differ in a few names, IPs and timestamps). Kept decoded, a typical operator-made pod costs
14 to 23 KB of Python objects; its JSON is about 6 KB; deflated on its own about 2 KB. Deflated
against a *preset dictionary* made of earlier objects of the same kind it costs about 200 bytes,
because almost everything in it has been seen before.

:class:`ObjectCodec` learns its dictionaries as it goes: the first object it encodes becomes the
first dictionary, and whenever an object compresses poorly (it is unlike what the dictionary
holds, say the first head pod after many worker pods) a new dictionary generation is made by
appending that object's JSON to the previous one (keeping the last 32 KB, deflate's window).
"Poorly" is tight on purpose. An object whose every field the dictionary has seen deflates to
4 to 5 % of its JSON, but the first objects are often poor teachers for the rest: against a pod
of another role each pod of a workload deflates to 9 to 13 % of its JSON, against pods encoded
before they had a status (created, not yet started) each running pod to about 6 %, and against
a custom object encoded before its first status each later one to 24 %. So a blob over 5.5 % of
its JSON, and over 128 bytes, teaches a new generation: learning costs one dictionary of at
most 32 KB; not learning costs a hundred bytes or more on each of thousands of objects. Measured
by replaying the watch events of 300 workload objects with three workers each (made on the
embedded plane) into stores that encode early versions (few decoded objects kept), at five
starting points (``benchmarks/codec_learning.py``): pods kept 244-256 bytes each with this
rule, 244-350 with 8 % and 256 bytes, and the workload objects 74-122 bytes, against 85-215
(the rule before that, 15 % and 512 bytes, kept a workload object with its four pods and its
Service in 2.1 to 3.1 KB).
Each encoded blob starts with the one-byte number of the generation it was made with, so older
blobs stay readable. A compressor primed with the newest dictionary is kept and copied per call
(with small hash tables, so the copy is cheap), so the dictionary is not re-hashed per object;
older generations keep only their dictionary bytes.

Decoding gives :class:`~rayop.runtime.informers.frozen.FrozenDict` trees (see
:func:`rayop.runtime.informers.frozen.freeze_decoded`); :meth:`ObjectCodec.decode_json` gives
the JSON text, which is how the event recorder's series cache
(:mod:`rayop.runtime.events.series`) reads back the Events it keeps, and the decision log
(:mod:`rayop.runtime.decisions`) the notes of the passes it keeps, each with a codec of its own.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import orjson

from rayop.runtime.informers.frozen import FrozenDict, freeze_decoded

WINDOW = 32 * 1024
"""Deflate's window: a preset dictionary longer than this is cut to its last 32 KB."""

MAX_GENERATIONS = 16
"""How many dictionaries one codec learns at most (then it keeps using the last one)."""

_LEVEL = 6
_MEM_LEVEL = 4  # small hash tables: much cheaper to copy, as good for objects of a few KB


class ObjectCodec:
    """Encodes JSON objects to small blobs and back; one per informer; never blocks.

    Args:
        learn_ratio: An object whose blob is larger than this fraction of its JSON (and over
            ``learn_min_bytes``) starts a new dictionary generation that includes it.
        learn_min_bytes: Blobs smaller than this never start a new generation.
    """

    def __init__(self, *, learn_ratio: float = 0.055, learn_min_bytes: int = 128) -> None:
        self._zdicts: list[bytes] = []
        self._compressor: zlib._Compress | None = None
        self._learn_ratio = learn_ratio
        self._learn_min_bytes = learn_min_bytes

    @property
    def generations(self) -> int:
        """How many dictionaries have been learned so far."""
        return len(self._zdicts)

    def encode(self, obj: Mapping[str, Any]) -> bytes:
        """Returns the blob of a JSON object (a plain or frozen dict)."""
        data = orjson.dumps(obj)
        if not self._zdicts:
            self._learn(data[-WINDOW:])
        blob = self._compress(data)
        if (
            len(blob) > self._learn_min_bytes
            and len(blob) > self._learn_ratio * len(data)
            and len(self._zdicts) < MAX_GENERATIONS
        ):
            self._learn((self._zdicts[-1] + data)[-WINDOW:])
            blob = self._compress(data)
        return bytes((len(self._zdicts) - 1,)) + blob

    def decode_json(self, blob: bytes) -> bytes:
        """Returns the JSON text a blob was made from."""
        decompressor = zlib.decompressobj(-15, self._zdicts[blob[0]])
        return decompressor.decompress(memoryview(blob)[1:]) + decompressor.flush()

    def decode(self, blob: bytes) -> FrozenDict:
        """Returns the read-only object a blob was made from (a new tree on every call)."""
        value = freeze_decoded(orjson.loads(self.decode_json(blob)))
        assert isinstance(value, FrozenDict)
        return value

    def _learn(self, zdict: bytes) -> None:
        self._zdicts.append(zdict)
        self._compressor = zlib.compressobj(
            _LEVEL, zlib.DEFLATED, -15, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, zdict
        )

    def _compress(self, data: bytes) -> bytes:
        assert self._compressor is not None
        compressor = self._compressor.copy()
        return compressor.compress(data) + compressor.flush()
