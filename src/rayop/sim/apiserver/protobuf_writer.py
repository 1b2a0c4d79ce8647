"""Writes a JSON-shaped dict straight to the protobuf bytes of its Kubernetes message.

The same conversion as ``protobuf_json.new_message`` followed by ``SerializeToString``, without
the message objects in between: each JSON key is looked up once in a per-message plan made
from the same tables (``protobuf_json``), and the value is written in protobuf's wire format
(https://protobuf.dev/programming-guides/encoding/): a varint tag, then a varint, a
length-delimited payload or fixed bytes. Fields come out in the dict's order (a parser takes
them in any order; maps and repeated fields keep theirs), and a present value is always
written, zero or not, as proto2 does for a field that was set.

It takes only what it can write exactly as the message path would store it; anything else (a
value of the wrong type, an int out of range, a packed field) raises :class:`Unwritable`, and
the caller goes the message way, whose errors name the field.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from rayop.sim.apiserver.encoded_objects import Spans
from rayop.sim.apiserver.protobuf_json import (
    ConversionError,
    b64decode_field,
    field_table,
    special_kwargs,
)

__all__ = ["Unwritable", "varint", "write_message", "write_object"]

_Writer = Callable[[Any], bytes]
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT32 = (0, (1 << 32) - 1)
_UINT64 = (0, (1 << 64) - 1)
_SMALL = [bytes((i,)) for i in range(128)]
_LENGTH_DELIMITED = 2
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"


class Unwritable(Exception):
    """A value the direct writer does not take: go the message way instead."""


def varint(value: int) -> bytes:
    """A non-negative int as a protobuf varint."""
    if value < 128:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def _string(value: Any) -> bytes:
    if type(value) is not str:
        raise Unwritable
    data = value.encode()
    return varint(len(data)) + data


def _raw_bytes(value: Any) -> bytes:
    if type(value) is not bytes:
        raise Unwritable
    return varint(len(value)) + value


def _base64(value: Any) -> bytes:
    try:
        return _raw_bytes(b64decode_field(value))
    except ConversionError as exc:
        raise Unwritable from exc


def _bool(value: Any) -> bytes:
    if value is True:
        return b"\x01"
    if value is False:
        return b"\x00"
    raise Unwritable


def _integer(bounds: tuple[int, int]) -> _Writer:
    low, high = bounds

    def write(value: Any) -> bytes:
        if type(value) is not int:
            if type(value) is float and value.is_integer():
                value = int(value)
            else:
                raise Unwritable
        if not low <= value <= high:
            raise Unwritable
        return varint(value & 0xFFFFFFFFFFFFFFFF)  # a negative int is 10 bytes of two's complement

    return write


def _floating(fmt: str) -> _Writer:
    def write(value: Any) -> bytes:
        if type(value) not in (int, float):
            raise Unwritable
        return struct.pack(fmt, float(value))

    return write


_SCALARS: dict[int, tuple[int, _Writer]] = {
    FieldDescriptor.TYPE_STRING: (_LENGTH_DELIMITED, _string),
    FieldDescriptor.TYPE_BOOL: (0, _bool),
    FieldDescriptor.TYPE_INT32: (0, _integer(_INT32)),
    FieldDescriptor.TYPE_INT64: (0, _integer(_INT64)),
    FieldDescriptor.TYPE_UINT32: (0, _integer(_UINT32)),
    FieldDescriptor.TYPE_UINT64: (0, _integer(_UINT64)),
    FieldDescriptor.TYPE_DOUBLE: (1, _floating("<d")),
    FieldDescriptor.TYPE_FLOAT: (5, _floating("<f")),
}


def _scalar(fd: FieldDescriptor, *, raw_bytes: bool = False) -> tuple[bytes, _Writer]:
    """(tag, writer) of one value of a scalar field; bytes come as base64 from JSON."""
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return _tag(fd.number, _LENGTH_DELIMITED), _raw_bytes if raw_bytes else _base64
    found = _SCALARS.get(fd.type)
    if found is None or (fd.is_repeated and fd.is_packed):
        return _tag(fd.number, 0), _unwritable
    wire, write = found
    return _tag(fd.number, wire), write


def _unwritable(value: Any) -> bytes:
    raise Unwritable


def _delimited(payload: bytes) -> bytes:
    return varint(len(payload)) + payload


def _special(desc: Descriptor) -> _Writer:
    """A message with its own JSON form: its constructor arguments, written field by field."""
    convert = special_kwargs(desc.full_name)
    assert convert is not None
    fields = {fd.name: (*_scalar(fd, raw_bytes=True), fd.is_repeated) for fd in desc.fields}
    quantity = desc.full_name == _QUANTITY

    def write(value: Any) -> bytes:
        if quantity and type(value) is str:  # the common case, without the kwargs
            data = value.encode()
            n = len(data)
            return (_SMALL[n + 2] if n < 126 else varint(n + 1 + len(varint(n)))) + (
                b"\n" + (_SMALL[n] if n < 128 else varint(n)) + data
            )
        try:
            kwargs = convert(value)
        except (TypeError, ValueError) as exc:
            raise Unwritable from exc
        out: list[bytes] = []
        for name, item in kwargs.items():
            tag, scalar, repeated = fields[name]
            if repeated:
                if type(item) is not list:
                    raise Unwritable
                for one in item:
                    out += (tag, scalar(one))
            else:
                out += (tag, scalar(item))
        return _delimited(b"".join(out))

    return write


@dataclass(slots=True)
class _Key:
    """How one JSON key of a message is written."""

    tag: bytes
    shape: int
    write: _Writer = _unwritable  # _ONE, _LIST and _MAP: one value's bytes after its tag
    message: Descriptor | None = None  # _MSG, _LIST_MSG, _INLINE: the (inlined) message
    key_tag: bytes = b""  # maps: the entry's key field
    value_tag: bytes = b""  # maps: the entry's value field


_ONE, _STR, _MSG, _LIST, _LIST_STR, _LIST_MSG, _MAP, _MAP_STR, _INLINE = range(9)
_PLANS: dict[Descriptor, dict[str, _Key]] = {}


def _plan(desc: Descriptor) -> dict[str, _Key]:
    plan = _PLANS.get(desc)
    if plan is None:
        plan = _PLANS[desc] = _make_plan(desc)
    return plan


def _ordinary(mt: Descriptor | None) -> bool:
    """A message written from its own plan (not one with its own JSON form)."""
    return mt is not None and special_kwargs(mt.full_name) is None


def _make_plan(desc: Descriptor) -> dict[str, _Key]:
    plan: dict[str, _Key] = {}
    for json_name, chain in field_table(desc).items():
        first = chain[0]
        fd = first.fd
        tag = _tag(fd.number, _LENGTH_DELIMITED)
        mt = fd.message_type
        if len(chain) > 1:
            plan[json_name] = _Key(tag, _INLINE, message=mt)
        elif first.is_map:
            assert mt is not None
            vfd = first.value_fd
            key_tag, _ = _scalar(mt.fields_by_name["key"])
            value_tag, write = _value_writer(vfd)
            shape = _MAP_STR if vfd.type == FieldDescriptor.TYPE_STRING else _MAP
            plan[json_name] = _Key(tag, shape, write, key_tag=key_tag, value_tag=value_tag)
        elif _ordinary(mt):
            plan[json_name] = _Key(tag, _LIST_MSG if first.repeated else _MSG, message=mt)
        elif fd.type == FieldDescriptor.TYPE_STRING:
            plan[json_name] = _Key(tag, _LIST_STR if first.repeated else _STR)
        else:
            tag, write = _value_writer(fd)
            plan[json_name] = _Key(tag, _LIST if first.repeated else _ONE, write)
    return plan


def _value_writer(vfd: FieldDescriptor) -> tuple[bytes, _Writer]:
    """(tag, writer) of one value of ``vfd`` (a field, or a map's value field)."""
    mt = vfd.message_type
    if mt is None:
        return _scalar(vfd)
    tag = _tag(vfd.number, _LENGTH_DELIMITED)
    if not _ordinary(mt):
        return tag, _special(mt)
    return tag, lambda value: _delimited(_payload(_plan(mt), value))


def _emit(out: list[bytes], k: _Key, key: str, value: Any) -> None:
    """Appends the field bytes of one (non-inlined) JSON key's value."""
    shape = k.shape
    small = _SMALL
    if shape == _STR:
        if type(value) is not str:
            raise Unwritable
        data = value.encode()
        n = len(data)
        out += (k.tag, small[n] if n < 128 else varint(n), data)
    elif shape == _MSG:
        assert k.message is not None
        data = _payload(_plan(k.message), value)
        n = len(data)
        out += (k.tag, small[n] if n < 128 else varint(n), data)
    elif shape == _ONE:
        out += (k.tag, k.write(value))
    elif shape in (_MAP_STR, _MAP):
        if type(value) is not dict:
            raise Unwritable
        tag, key_tag, value_tag = k.tag, k.key_tag, k.value_tag
        write = _string if shape == _MAP_STR else k.write
        for name, item in value.items():
            if item is not None:
                entry = key_tag + _string(name) + value_tag + write(item)
                out += (tag, varint(len(entry)), entry)
    elif shape == _LIST_MSG:
        if type(value) is not list:
            raise Unwritable
        assert k.message is not None
        tag, sub = k.tag, _plan(k.message)
        for item in value:
            data = _payload(sub, item)
            n = len(data)
            out += (tag, small[n] if n < 128 else varint(n), data)
    else:  # _LIST_STR, _LIST
        if type(value) is not list:
            raise Unwritable
        tag, write = k.tag, _string if shape == _LIST_STR else k.write
        for item in value:
            if item is None:
                raise Unwritable
            out += (tag, write(item))


def _payload(plan: dict[str, _Key], obj: Any) -> bytes:
    if type(obj) is not dict:
        raise Unwritable
    out: list[bytes] = []
    inlined: dict[bytes, tuple[Descriptor, dict[str, Any]]] | None = None
    for key, value in obj.items():
        k = plan.get(key)
        if k is None or value is None:
            continue
        if k.shape == _STR and type(value) is str:  # the most common field, inline
            data = value.encode()
            n = len(data)
            out += (k.tag, _SMALL[n] if n < 128 else varint(n), data)
        elif k.shape != _INLINE:
            _emit(out, k, key, value)
        else:
            assert k.message is not None
            if inlined is None:
                inlined = {}
            inlined.setdefault(k.tag, (k.message, {}))[1][key] = value
    if inlined:
        for tag, (desc, sub_obj) in inlined.items():
            data = _payload(_plan(desc), sub_obj)
            out += (tag, varint(len(data)), data)
    return b"".join(out)


def write_object(
    desc: Descriptor, obj: Any, previous: tuple[bytes, Spans] | None = None
) -> tuple[bytes, Spans]:
    """The message bytes of ``obj`` with the spans of its top-level container fields; a field
    whose value is the very value of ``previous``'s span reuses those bytes.

    Raises:
        Unwritable: A value this writer does not take (the message path decides about it).
    """
    plan = _plan(desc)
    if type(obj) is not dict:
        raise Unwritable
    if any(plan[key].shape == _INLINE for key in obj if key in plan):
        return _payload(plan, obj), {}  # no top-level kind inlines; no spans if one did
    old_data, old_spans = previous or (b"", {})
    out: list[bytes] = []
    spans: Spans = {}
    pos = 0
    for key, value in obj.items():
        k = plan.get(key)
        if k is None or value is None:
            continue
        span = old_spans.get(key)
        if span is not None and span[0] is value:
            chunk = old_data[span[1] : span[2]]
        else:
            parts: list[bytes] = []
            _emit(parts, k, key, value)
            chunk = b"".join(parts)
        if type(value) in (dict, list):
            spans[key] = (value, pos, pos + len(chunk))
        out.append(chunk)
        pos += len(chunk)
    return b"".join(out), spans


def write_message(desc: Descriptor, obj: Any) -> bytes:
    """The message bytes of ``obj`` as a ``desc``; keys without a field are dropped.

    Raises:
        Unwritable: A value this writer does not take (the message path decides about it).
    """
    return _payload(_plan(desc), obj)
