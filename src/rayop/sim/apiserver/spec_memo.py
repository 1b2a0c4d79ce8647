"""The specs last converted between protobuf and JSON, by content, so a repeated one is not
converted again.

An operator creates a group's pods from one template: their specs are the same message, byte
for byte, and after the server's defaulting the same dict. Converting a pod's spec is most of
what a protobuf create costs the plane in Python (a dozen nested messages, each through the
field table), against a few microseconds for the JSON path. So:

- :data:`DECODED` keys a top-level ``spec`` message's wire bytes (with its message type) to the
  JSON text of its dict: a hit is one ``orjson.loads``, a fresh dict for the caller to own.
- :data:`ENCODED` keys a ``spec`` dict's JSON text (with its message type) to its field's bytes
  (tag, length, message): a hit is appended as it is (a message's fields may come in any
  order, https://protobuf.dev/programming-guides/encoding/#order).

Both are exact: equal keys give equal conversions (the conversion depends on the value alone),
and a different key order, a 1 against a 1.0, any difference at all, misses. Each keeps its
``capacity`` most recently used entries (a group's pods are created one after another).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

__all__ = ["DECODED", "ENCODED", "SpecMemo"]

MEMO_KEYS: Final[frozenset[str]] = frozenset({"spec"})
"""The top-level JSON keys whose conversions are kept."""


class SpecMemo:
    """A bounded map of conversions, least recently used first out.

    Args:
        capacity: Entries kept.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, bytes], bytes] = OrderedDict()

    def get(self, message: str, key: bytes) -> bytes | None:
        """The conversion kept for ``key`` as a ``message``, or None."""
        found = self._entries.get((message, key))
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end((message, key))
        return found

    def put(self, message: str, key: bytes, value: bytes) -> None:
        """Keeps ``value`` for ``key`` as a ``message``."""
        self._entries[(message, key)] = value
        self._entries.move_to_end((message, key))
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


DECODED = SpecMemo(capacity=256)
"""Top-level spec messages read from protobuf bodies: wire bytes to JSON text."""

ENCODED = SpecMemo(capacity=256)
"""Top-level spec dicts written as protobuf: JSON text to the field's bytes."""
