"""Writes an object's protobuf message bytes field by field, so that a new version of the object
reuses the bytes of the top-level fields it shares with the version encoded before it.

A message's bytes are its fields' bytes one after another, each a tag and a value, in any
order (https://protobuf.dev/programming-guides/encoding/#order). The fields are written by
``protobuf_json.new_message`` (upb's constructor and serializer), and where each top-level
field's bytes lie is read back from the tags and recorded (``Spans``). The store never changes
a stored dict in place, so when a key's value is the very value (by identity) of the previous
version's span, those bytes are appended as they are and only the other keys are written: a
status write shares the spec dict with the version before it, a main-resource write the status.
The fields are put in number order, reused or not, as upb and Go write them. A ``spec`` not
shared so, yet equal to one written lately (a group's pods, a PUT that keeps the spec), reuses
that one's bytes (``spec_memo.ENCODED``).
"""

from __future__ import annotations

import functools
from typing import Any

import orjson
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor

from rayop.sim.apiserver.encoded_objects import Spans
from rayop.sim.apiserver.protobuf_json import ConversionError, field_table, new_message
from rayop.sim.apiserver.spec_memo import ENCODED, MEMO_KEYS

__all__ = ["Unwritable", "varint", "write_object"]


class Unwritable(Exception):
    """An object this writer does not write: encode it whole, whose errors name the field."""


def varint(value: int) -> bytes:
    """A non-negative int as a protobuf varint."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@functools.cache
def _keys_by_number(desc: Descriptor) -> dict[int, str]:
    """The top-level JSON key of each field number (fields not inlined into another)."""
    return {chain[0].fd.number: key for key, chain in field_table(desc).items() if len(chain) == 1}


@functools.cache
def _numbers_by_key(desc: Descriptor) -> dict[str, int]:
    """The field number of each top-level JSON key (the inverse of :func:`_keys_by_number`)."""
    return {key: number for number, key in _keys_by_number(desc).items()}


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _field_ranges(data: bytes) -> dict[int, tuple[int, int]]:
    """Where each top-level field's bytes lie in a message (a repeated field's elements and a
    map's entries are written one after another)."""
    ranges: dict[int, tuple[int, int]] = {}
    pos = 0
    while pos < len(data):
        start = pos
        tag, pos = _read_varint(data, pos)
        wire = tag & 7
        if wire == 0:
            _, pos = _read_varint(data, pos)
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise Unwritable  # groups: not in Kubernetes' messages
        number = tag >> 3
        first = ranges.get(number)
        ranges[number] = (start if first is None else first[0], pos)
    return ranges


def _json_text(value: dict[str, Any]) -> bytes | None:
    """The memo key of a spec dict: its JSON text (None for a value JSON cannot hold)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return None


def write_object(
    desc: Descriptor, obj: Any, previous: tuple[bytes, Spans] | None = None
) -> tuple[bytes, Spans]:
    """The message bytes of ``obj`` with the spans of its top-level container fields; a field
    whose value is the very value of ``previous``'s span (or a spec equal to one written lately)
    reuses those bytes, the others are written together in one message; the fields in number
    order.

    Raises:
        Unwritable: ``obj`` is not a dict, a key is inlined into a nested message, or a value
            does not fit its field.
    """
    if type(obj) is not dict:
        raise Unwritable
    fields = field_table(desc)
    old_data, old_spans = previous or (b"", {})
    fresh: dict[str, Any] = {}
    reused: list[tuple[str, Any, bytes]] = []
    memo_misses: list[tuple[str, bytes]] = []
    for key, value in obj.items():
        chain = fields.get(key)
        if chain is None or value is None:
            continue
        if len(chain) > 1:
            raise Unwritable  # an inlined key: the whole message keeps its fields together
        span = old_spans.get(key)
        if span is not None and span[0] is value:
            reused.append((key, value, old_data[span[1] : span[2]]))
            continue
        if key in MEMO_KEYS and type(value) is dict:
            text = _json_text(value)
            chunk = None if text is None else ENCODED.get(desc.full_name, text)
            if chunk is not None:
                reused.append((key, value, chunk))
                continue
            if text is not None:
                memo_misses.append((key, text))
        fresh[key] = value
    try:
        data = bytes(new_message(message_factory.GetMessageClass(desc), fresh).SerializeToString())
    except ConversionError as exc:
        raise Unwritable from exc
    keys = _keys_by_number(desc)
    numbers = _numbers_by_key(desc)
    pieces = [
        (number, keys[number], fresh[keys[number]], data[start:end])
        for number, (start, end) in _field_ranges(data).items()
    ]
    for key, text in memo_misses:
        for _number, piece_key, _value, chunk in pieces:
            if piece_key == key:
                ENCODED.put(desc.full_name, text, chunk)
    pieces += [(numbers[key], key, value, chunk) for key, value, chunk in reused]
    pieces.sort(key=lambda piece: piece[0])  # in field order, as upb and Go write them
    out = bytearray()
    spans: Spans = {}
    for _number, key, value, chunk in pieces:
        if type(value) in (dict, list):
            spans[key] = (value, len(out), len(out) + len(chunk))
        out += chunk
    return bytes(out), spans
