"""Conversion between Kubernetes protobuf messages and the server's JSON-shaped dicts.

The generated messages (``proto/``) carry the proto field names; the JSON side follows the Go
struct tags, recorded by scripts/gen-protobuf in ``proto/go_fields.py``: a field's JSON name,
whether its message is inlined into the parent (``Volume.volumeSource``, ``Probe.handler``),
and whether Go's JSON writes its zero value (a pointer, or a field without omitempty). A
message read from protobuf becomes the dict Go's ``json.Marshal`` would give for the same
struct: zero scalars of omitempty fields, empty lists and maps and zero times are left out.

The types with their own JSON form are converted by hand: Time (RFC 3339, seconds),
MicroTime (microseconds), Duration (Go's duration string), IntOrString (a number or a
string), Quantity (a string), RawExtension and FieldsV1 (embedded JSON).
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from rayop.apimachinery.objects import Obj
from rayop.sim.apiserver.proto.go_fields import FIELDS, WRAPPERS

__all__ = [
    "ConversionError",
    "Field",
    "field_table",
    "message_from_dict",
    "message_to_dict",
    "new_message",
]

_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_TIME = _META + "Time"
_MICRO_TIME = _META + "MicroTime"
_DURATION = _META + "Duration"
_FIELDS_V1 = _META + "FieldsV1"
_RAW = "k8s.io.apimachinery.pkg.runtime.RawExtension"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class ConversionError(ValueError):
    """A value that does not fit its field (the message says which field and why)."""


@dataclass(eq=False)
class Field:
    """One field of a message with its JSON name, its rules and its value converters."""

    fd: FieldDescriptor
    name: str
    json: str
    inline: bool
    keep_zero: bool
    is_map: bool
    repeated: bool
    is_message: bool
    value_fd: FieldDescriptor  # a map's value field, else the field itself
    to_json: Callable[[Any], Any] | None  # one value to JSON (None: as it is)
    to_kwargs: Callable[[Any], Any] | None  # one JSON value to a constructor value


@dataclass
class _Table:
    """A message's fields by number and by JSON name (inlined messages' names included)."""

    by_number: dict[int, Field] = field(default_factory=dict)
    by_json: dict[str, tuple[Field, ...]] = field(default_factory=dict)


def _b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _b64decode(value: Any) -> bytes:
    if not isinstance(value, str):
        raise ConversionError(f"expected a base64 string, got {_type(value)}")
    try:  # Go's base64 decoding skips line breaks (a PEM pasted as a block scalar)
        return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
    except ValueError as exc:
        raise ConversionError("illegal base64 data") from exc


def _converters(vfd: FieldDescriptor) -> tuple[Any, Any]:
    """(to JSON, to constructor value) of one value of ``vfd``'s type."""
    mt = vfd.message_type
    if mt is None:
        if vfd.type == FieldDescriptor.TYPE_BYTES:
            return _b64encode, _b64decode
        return None, None
    name = mt.full_name
    if name in _TO_JSON:
        return _TO_JSON[name], _KWARGS[name]
    if name in WRAPPERS:
        return (lambda m: list(m.items)), (lambda v: {"items": v})
    return message_to_dict, (lambda v: _kwargs(mt, v))


@functools.cache
def _table(desc: Descriptor) -> _Table:
    tags = FIELDS.get(desc.full_name, {})
    table = _Table()
    for fd in desc.fields:
        json_name, flags = tags.get(fd.name, (fd.name, ""))
        mt = fd.message_type
        is_map = mt is not None and mt.GetOptions().map_entry
        vfd = mt.fields_by_name["value"] if is_map and mt is not None else fd
        to_json, to_kwargs = _converters(vfd)
        f = Field(
            fd,
            fd.name,
            json_name,
            "i" in flags,
            "z" in flags,
            is_map,
            fd.is_repeated and not is_map,
            mt is not None and not is_map,
            vfd,
            to_json,
            to_kwargs,
        )
        table.by_number[fd.number] = f
        if f.inline and mt is not None:
            for key, path in _table(mt).by_json.items():
                table.by_json[key] = (f, *path)
        else:
            table.by_json[json_name] = (f,)
    return table


def field_table(desc: Descriptor) -> dict[str, tuple[Field, ...]]:
    """A message's fields by JSON name: the field, after the inlined messages that lead to it."""
    return _table(desc).by_json


def message_to_dict(msg: Message) -> Obj:
    """Returns the JSON-shaped dict of a (non-special) message."""
    out: Obj = {}
    by_number = _table(msg.DESCRIPTOR).by_number
    for fd, value in msg.ListFields():
        f = by_number[fd.number]
        conv = f.to_json
        if f.is_map:
            if value:
                out[f.json] = (
                    dict(value) if conv is None else {k: conv(v) for k, v in value.items()}
                )
        elif f.repeated:
            if value:
                out[f.json] = list(value) if conv is None else [conv(v) for v in value]
        elif f.inline:
            out.update(message_to_dict(value))
        elif f.is_message:
            assert conv is not None
            converted = conv(value)
            if converted is not None:
                out[f.json] = converted
        elif f.keep_zero or value:  # Go's omitempty leaves out "", 0 and false
            out[f.json] = value if conv is None else conv(value)
    return out


def _kwargs(desc: Descriptor, obj: Any) -> Obj:
    """The constructor arguments of a message from its JSON form (the fast path: the C
    constructor checks the types; any mismatch sends the caller to :func:`message_from_dict`,
    which names the field)."""
    if not isinstance(obj, dict):
        raise ConversionError(f"expected an object, got {_type(obj)}")
    by_json = _table(desc).by_json
    kw: Obj = {}
    for key, value in obj.items():
        chain = by_json.get(key)
        if chain is None or value is None:
            continue
        target = kw
        for inline in chain[:-1]:
            target = target.setdefault(inline.name, {})
        f = chain[-1]
        conv = f.to_kwargs
        if conv is None:
            target[f.name] = value
        elif f.is_map:
            target[f.name] = {k: conv(v) for k, v in value.items() if v is not None}
        elif f.repeated:
            target[f.name] = [conv(v) for v in value]
        else:
            target[f.name] = conv(value)
    return kw


def new_message(cls: type[Message], obj: Any) -> Message:
    """Builds a message of ``cls`` from its JSON form; keys without a field are dropped.

    Raises:
        ConversionError: A value of the wrong type, naming its field.
    """
    desc: Any = cls.DESCRIPTOR
    try:
        return cls(**_kwargs(desc, obj))
    except (TypeError, ValueError, AttributeError):
        msg = cls()
        message_from_dict(msg, obj)  # the slow path names the field that does not fit
        return msg


def message_from_dict(msg: Message, obj: Any, path: str = "") -> None:
    """Fills ``msg`` from a JSON-shaped dict; keys the message has no field for are dropped.

    Raises:
        ConversionError: A value of the wrong type for its field.
    """
    if not isinstance(obj, dict):
        raise ConversionError(f"{path or '<root>'}: expected an object, got {_type(obj)}")
    table = _table(msg.DESCRIPTOR)
    msg.SetInParent()
    for key, value in obj.items():
        chain = table.by_json.get(key)
        if chain is None or value is None:
            continue
        target = msg
        for inline in chain[:-1]:  # inlined messages on the way down
            target = getattr(target, inline.fd.name)
            target.SetInParent()
        _set(target, chain[-1], value, f"{path}.{key}" if path else key)


def _set(msg: Message, f: Field, value: Any, path: str) -> None:
    fd = f.fd
    if f.is_map:
        if not isinstance(value, dict):
            raise ConversionError(f"{path}: expected an object, got {_type(value)}")
        container = getattr(msg, fd.name)
        vfd = f.value_fd
        assert vfd is not None
        for k, v in value.items():
            if v is None:
                continue
            if vfd.message_type is None:
                container[k] = _scalar(vfd, v, f"{path}.{k}")
            else:
                _fill(container[k], vfd, v, f"{path}.{k}")
        return
    if fd.is_repeated:
        if not isinstance(value, list):
            raise ConversionError(f"{path}: expected a list, got {_type(value)}")
        container = getattr(msg, fd.name)
        for i, item in enumerate(value):
            if fd.message_type is None:
                container.append(_scalar(fd, item, f"{path}[{i}]"))
            else:
                _fill(container.add(), fd, item, f"{path}[{i}]")
        return
    if fd.message_type is None:
        setattr(msg, fd.name, _scalar(fd, value, path))
    else:
        _fill(getattr(msg, fd.name), fd, value, path)


def _fill(sub: Message, fd: FieldDescriptor, value: Any, path: str) -> None:
    mt = fd.message_type
    assert mt is not None
    special = _KWARGS.get(mt.full_name)
    if special is not None:
        try:
            kw = special(value)
        except (TypeError, ValueError) as exc:
            raise ConversionError(f"{path}: {exc}") from exc
        sub.SetInParent()
        for k, v in kw.items():
            setattr(sub, k, v)
    elif mt.full_name in WRAPPERS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConversionError(f"{path}: expected a list of strings, got {_type(value)}")
        wrapper: Any = sub
        wrapper.SetInParent()
        wrapper.items.extend(value)
    else:
        message_from_dict(sub, value, path)


_INTEGERS = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


def _scalar(fd: FieldDescriptor, value: Any, path: str) -> Any:
    t = fd.type
    if t == FieldDescriptor.TYPE_STRING:
        if isinstance(value, str):
            return value
    elif t == FieldDescriptor.TYPE_BOOL:
        if isinstance(value, bool):
            return value
    elif t in _INTEGERS:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif t == FieldDescriptor.TYPE_BYTES and isinstance(value, str):
        try:
            return _b64decode(value)
        except ConversionError as exc:
            raise ConversionError(f"{path}: {exc}") from exc
    raise ConversionError(f"{path}: cannot store {_type(value)} in a {_TYPE_NAMES.get(t, t)} field")


_TYPE_NAMES = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_BYTES: "bytes (base64)",
    FieldDescriptor.TYPE_DOUBLE: "number",
    FieldDescriptor.TYPE_FLOAT: "number",
    **{t: "integer" for t in _INTEGERS},
}


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a bool"}.get(
        type(value), type(value).__name__
    )


# --- the types with their own JSON form -------------------------------------------------------


def _time_to_json(msg: Any) -> str | None:
    if not msg.HasField("seconds") and not msg.HasField("nanos"):
        return None  # Go's zero Time: its JSON is null
    t = _EPOCH + dt.timedelta(seconds=msg.seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time_to_json(msg: Any) -> str | None:
    if not msg.HasField("seconds") and not msg.HasField("nanos"):
        return None
    t = _EPOCH + dt.timedelta(seconds=msg.seconds, microseconds=msg.nanos // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any) -> dt.datetime:
    if not isinstance(value, str):
        raise TypeError(f"expected an RFC 3339 time string, got {_type(value)}")
    t = dt.datetime.fromisoformat(value)
    if t.tzinfo is None:
        raise ValueError(f"time {value!r} has no time zone")
    return t


def _time_kwargs(value: Any) -> Obj:
    if value == "":
        return {}  # Go's zero Time
    t = _parse_time(value)
    return {"seconds": int((t - _EPOCH).total_seconds() // 1), "nanos": 0}


def _micro_time_kwargs(value: Any) -> Obj:
    if value == "":
        return {}
    delta = _parse_time(value) - _EPOCH
    return {"seconds": delta.days * 86400 + delta.seconds, "nanos": delta.microseconds * 1000}


_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 10**9}
_DURATION_UNITS |= {"m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def format_go_duration(ns: int) -> str:
    """Formats nanoseconds as Go's ``time.Duration.String()`` does ("1h2m3.5s", "150ms")."""
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if ns >= size:
                return sign + _decimal(ns, size) + unit
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    text = _decimal(rem, 10**9) + "s"
    if h:
        return f"{sign}{h}h{m}m{text}"
    if m:
        return f"{sign}{m}m{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def parse_go_duration(text: str) -> int:
    """Parses Go's duration syntax ("1h30m", "-1.5s") into nanoseconds."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0
    pos, total = 0, 0.0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    return -round(total) if text.startswith("-") else round(total)


def _duration_kwargs(value: Any) -> Obj:
    if not isinstance(value, str):
        raise TypeError(f"expected a duration string, got {_type(value)}")
    return {"duration": parse_go_duration(value)}


def _int_or_string_to_json(msg: Any) -> int | str:
    return str(msg.strVal) if msg.type == 1 else int(msg.intVal)


def _int_or_string_kwargs(value: Any) -> Obj:
    if isinstance(value, bool):
        raise TypeError("expected a number or a string, got a bool")
    if isinstance(value, int):
        return {"type": 0, "intVal": value}
    if isinstance(value, str):
        return {"type": 1, "strVal": value}
    raise TypeError(f"expected a number or a string, got {_type(value)}")


def _quantity_kwargs(value: Any) -> Obj:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError(f"expected a quantity string or number, got {_type(value)}")
    return {"string": value if isinstance(value, str) else repr(value)}


def _raw_to_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConversionError(f"embedded object is not JSON: {exc}") from exc


_TO_JSON: dict[str, Callable[[Any], Any]] = {
    _TIME: _time_to_json,
    _MICRO_TIME: _micro_time_to_json,
    _DURATION: lambda m: format_go_duration(m.duration),
    _INT_OR_STRING: _int_or_string_to_json,
    _QUANTITY: lambda m: str(m.string),
    _RAW: lambda m: _raw_to_json(m.raw),
    _FIELDS_V1: lambda m: _raw_to_json(m.Raw),
}
_KWARGS: dict[str, Callable[[Any], Obj]] = {
    _TIME: _time_kwargs,
    _MICRO_TIME: _micro_time_kwargs,
    _DURATION: _duration_kwargs,
    _INT_OR_STRING: _int_or_string_kwargs,
    _QUANTITY: _quantity_kwargs,
    _RAW: lambda v: {"raw": orjson.dumps(v)},
    _FIELDS_V1: lambda v: {"Raw": orjson.dumps(v)},
}
