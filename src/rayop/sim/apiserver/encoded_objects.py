"""A bounded memo of objects' protobuf message bytes, so each stored version is encoded once.

The store never changes a stored object in place: every write commits a new dict (see
``rayop.sim.storage.objects``). So the message bytes of one dict, once made, serve every later
GET, LIST and watch event of that version, for every protobuf client. An entry is keyed by the
message type, namespace and name, holds the dict it was made from, and is used only for that
very dict (an identity check): a newer version, a dry-run result or an alias's copy misses and
takes the entry's place. Keying by name keeps at most one version of an object alive here; the
least recently used entries go beyond ``capacity`` (deleted objects' last states, mostly).

An entry also records where each top-level field's bytes lie (``Spans``), so the next version
of the object reuses the bytes of the fields it shares with this one by identity: a status
write shares the spec dict with the version before it, a main-resource write the status.
"""

from __future__ import annotations

from collections import OrderedDict

from rayop.apimachinery.objects import Obj

__all__ = ["EncodedObjects", "Entry", "Spans"]

_Key = tuple[str, str, str]
Spans = dict[str, tuple[object, int, int]]
"""A top-level JSON key -> (its value, start and end of its field's bytes in the message)."""
Entry = tuple[Obj, bytes, Spans]


class EncodedObjects:
    """Message bytes by (message type, namespace, name), valid for one dict each.

    Args:
        capacity: Entries kept; the least recently used ones go first beyond it.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[_Key, Entry] = OrderedDict()

    @staticmethod
    def key(message: str, obj: Obj) -> _Key | None:
        """The entry key of ``obj`` as a ``message``, or None for an object without a name."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return None
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return None
        namespace = meta.get("namespace")
        return message, namespace if isinstance(namespace, str) else "", name

    def get(self, key: _Key, obj: Obj) -> bytes | None:
        """The bytes made from this very dict, or None."""
        entry = self._entries.get(key)
        if entry is None or entry[0] is not obj:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def previous(self, key: _Key) -> Entry | None:
        """The entry of the name, whichever version of the object it was made from."""
        return self._entries.get(key)

    def put(self, key: _Key, obj: Obj, data: bytes, spans: Spans) -> None:
        """Remembers ``data`` as the bytes of ``obj`` (replacing the name's older entry)."""
        entries = self._entries
        entries[key] = (obj, data, spans)
        entries.move_to_end(key)
        if len(entries) > self.capacity:
            entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forgets every entry."""
        self._entries.clear()
