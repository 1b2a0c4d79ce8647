"""Kubernetes' protobuf wire format for the built-in kinds: objects, lists, watch frames.

A protobuf body is the magic ``k8s\\0`` followed by a ``runtime.Unknown`` envelope: the
object's typeMeta (apiVersion, kind), its message in ``raw``, and empty contentEncoding and
contentType. The message for an apiVersion/kind comes from the modules scripts/gen-protobuf
generates from Kubernetes' own generated.proto files (``proto/``); ``protobuf_json`` converts
between messages and the server's JSON-shaped dicts. A watch over protobuf is a stream of
frames, each a 4-byte big-endian length and a ``WatchEvent`` message (not enveloped) whose
``object.raw`` holds the enveloped object. Custom resources have no messages: they stay JSON.

Encoding is the costly direction (a dict to a message goes through Python), so an object's
message bytes are made once per stored version (``encoded_objects``) and spliced as they are
into lists and watch frames: a list is its list message without items followed by one
length-delimited ``items`` field per object, which is how protobuf writes a repeated field
(https://protobuf.dev/programming-guides/encoding/#embedded).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import pkgutil
import struct
from typing import Any

import orjson
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message

from rayop.apimachinery.objects import Obj
from rayop.sim.apiserver import proto
from rayop.sim.apiserver.encoded_objects import EncodedObjects, Spans
from rayop.sim.apiserver.proto.go_fields import API_VERSIONS
from rayop.sim.apiserver.protobuf_json import (
    ConversionError,
    Field,
    field_table,
    message_to_dict,
    new_message,
)
from rayop.sim.apiserver.protobuf_writer import Unwritable, varint, write_object
from rayop.sim.apiserver.spec_memo import DECODED, MEMO_KEYS
from rayop.sim.machinery import errors as se

__all__ = [
    "PROTOBUF",
    "decode_protobuf",
    "encode_protobuf",
    "encode_watch_frame",
    "has_message",
    "message_class",
    "read_watch_frames",
]

PROTOBUF = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_META_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1"
_UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"
_WATCH_EVENT = f"{_META_V1}.WatchEvent"
_WIRE_LENGTH_DELIMITED = 2
_ENCODED = EncodedObjects(capacity=1 << 16)


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    for mod in pkgutil.iter_modules(proto.__path__):
        if mod.name.endswith("_pb2"):
            importlib.import_module(f"{proto.__name__}.{mod.name}")
    return descriptor_pool.Default()


@functools.cache
def _descriptor(api_version: str, kind: str) -> Descriptor | None:
    """The message of an apiVersion/kind; meta/v1's own kinds (Status, DeleteOptions...)
    serve under every apiVersion, as they do in Kubernetes' scheme."""
    pool = _pool()
    for package in (API_VERSIONS.get(api_version), _META_V1):
        if package is None:
            continue
        try:
            return pool.FindMessageTypeByName(f"{package}.{kind}")
        except KeyError:
            continue
    return None


@functools.cache
def _message_class(name: str) -> type[Message]:
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(name))


def _message(name: str) -> Message:
    return _message_class(name)()


def message_class(api_version: str, kind: str) -> type[Message] | None:
    """The generated message class of an apiVersion/kind (meta/v1's kinds under any), or None."""
    desc = _descriptor(api_version, kind)
    return None if desc is None else message_factory.GetMessageClass(desc)


def has_message(api_version: str, kind: str) -> bool:
    """Whether objects of this apiVersion/kind have a protobuf encoding."""
    return _descriptor(api_version, kind) is not None


def decode_protobuf(body: bytes) -> Obj:
    """Decodes a protobuf-encoded object (magic + envelope) into its JSON form.

    Raises:
        StatusError: 400 for a body without the magic, a malformed envelope or message, or
            a value that does not fit its field; 415 for a kind that has no protobuf message.
    """
    if not body.startswith(_MAGIC):
        raise se.bad_request("protobuf body without the k8s magic prefix")
    envelope: Any = _message(_UNKNOWN)
    try:
        envelope.ParseFromString(body[len(_MAGIC) :])
    except DecodeError as exc:
        raise se.bad_request(f"unable to decode the protobuf envelope: {exc}") from exc
    api_version, kind = str(envelope.typeMeta.apiVersion), str(envelope.typeMeta.kind)
    if envelope.contentEncoding:
        raise se.bad_request(f"unsupported protobuf content encoding {envelope.contentEncoding!r}")
    desc = _descriptor(api_version, kind)
    if desc is None:
        raise se.unsupported_media_type(f"{PROTOBUF} ({api_version}/{kind})")
    msg = message_factory.GetMessageClass(desc)()
    try:
        msg.ParseFromString(envelope.raw)
        obj = _object_to_dict(msg)
    except DecodeError as exc:
        raise se.bad_request(f"unable to decode {api_version}/{kind} from protobuf: {exc}") from exc
    except ConversionError as exc:
        raise se.bad_request(f"unable to decode {api_version}/{kind} from protobuf: {exc}") from exc
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj


@functools.cache
def _memo_fields(desc: Descriptor) -> tuple[tuple[str, int, Field], ...]:
    """The top-level message fields of ``desc`` whose conversions ``spec_memo`` keeps: JSON
    key, field number and field."""
    out = []
    for key in MEMO_KEYS:
        chain = field_table(desc).get(key)
        if chain is not None and len(chain) == 1 and chain[0].is_message and not chain[0].repeated:
            out.append((key, chain[0].fd.number, chain[0]))
    return tuple(out)


def _object_to_dict(msg: Message) -> Obj:
    """``message_to_dict`` of an object, its spec converted once per distinct message
    (``spec_memo.DECODED``); the keys in field order, as without the memo."""
    memo = _memo_fields(msg.DESCRIPTOR)
    if not memo:
        return message_to_dict(msg)
    converted: dict[str, Any] = {}
    for key, _number, f in memo:
        if not msg.HasField(f.fd.name):
            continue
        part = getattr(msg, f.fd.name)
        wire = part.SerializeToString()
        message = msg.DESCRIPTOR.full_name
        text = DECODED.get(message, wire)
        if text is not None:
            value = orjson.loads(text)
        else:
            assert f.to_json is not None
            value = f.to_json(part)
            with contextlib.suppress(TypeError):  # a value JSON text cannot hold: not kept
                DECODED.put(message, wire, orjson.dumps(value))
        if value is not None:
            converted[key] = value
        msg.ClearField(f.fd.name)
    rest = message_to_dict(msg)
    if not converted:
        return rest
    numbers = _numbers(msg.DESCRIPTOR)
    ordered = {**rest, **converted}
    return {key: ordered[key] for key in sorted(ordered, key=lambda k: numbers.get(k, 1 << 30))}


@functools.cache
def _numbers(desc: Descriptor) -> dict[str, int]:
    """The field number of each top-level JSON key (an inlined key: its message's field)."""
    return {key: chain[0].fd.number for key, chain in field_table(desc).items()}


def _message_bytes(desc: Descriptor, obj: Any) -> bytes:
    return bytes(new_message(message_factory.GetMessageClass(desc), obj).SerializeToString())


def _object_bytes(desc: Descriptor, obj: Any) -> bytes:
    """The message bytes of one object, made once per stored version (see encoded_objects),
    reusing the bytes of the fields it shares with the version encoded before it."""
    key = EncodedObjects.key(desc.full_name, obj) if isinstance(obj, dict) else None
    if key is None:
        return _message_bytes(desc, obj)
    cached = _ENCODED.get(key, obj)
    if cached is not None:
        return cached
    previous = _ENCODED.previous(key)
    spans: Spans = {}
    try:
        data, spans = write_object(desc, obj, None if previous is None else previous[1:])
    except Unwritable:
        data = _message_bytes(desc, obj)
    _ENCODED.put(key, obj, data, spans)
    return data


@functools.cache
def _items_field(desc: Descriptor) -> tuple[bytes, Descriptor] | None:
    """A list message's ``items`` field: its tag and its element message, or None."""
    fd = desc.fields_by_name.get("items")
    if fd is None or not fd.is_repeated or fd.message_type is None:
        return None
    if not desc.name.endswith("List"):
        return None
    return varint(fd.number << 3 | _WIRE_LENGTH_DELIMITED), fd.message_type


def _raw_message(desc: Descriptor, obj: Obj) -> bytes:
    items = _items_field(desc)
    if items is None or not isinstance(obj.get("items"), list):
        return _object_bytes(desc, obj)
    tag, element = items
    head = {k: v for k, v in obj.items() if k != "items"}
    parts = [_message_bytes(desc, head)]
    for item in obj["items"]:
        data = _object_bytes(element, item)
        parts += (tag, varint(len(data)), data)
    return b"".join(parts)


def _envelope(obj: Obj, api_version: str, kind: str) -> bytes:
    desc = _descriptor(api_version, kind)
    if desc is None:
        raise se.internal_error(f"no protobuf message for {api_version}/{kind}")
    try:
        raw = _raw_message(desc, obj)
    except ConversionError as exc:
        raise se.internal_error(f"cannot encode {api_version}/{kind} as protobuf: {exc}") from exc
    return b"".join((_envelope_head(api_version, kind), varint(len(raw)), raw, _ENVELOPE_TAIL))


def _delimited(number: int, data: bytes) -> bytes:
    """One length-delimited field: its tag, the length, the bytes."""
    return varint(number << 3 | _WIRE_LENGTH_DELIMITED) + varint(len(data)) + data


_ENVELOPE_TAIL = _delimited(3, b"") + _delimited(4, b"")
"""The envelope's empty contentEncoding and contentType, written as set (proto2)."""


@functools.cache
def _envelope_head(api_version: str, kind: str) -> bytes:
    """The magic, the envelope's typeMeta field and the tag of its raw field: the bytes upb
    writes for ``runtime.Unknown`` before the object (fields in number order)."""
    type_meta = _delimited(1, api_version.encode()) + _delimited(2, kind.encode())
    return _MAGIC + _delimited(1, type_meta) + varint(2 << 3 | _WIRE_LENGTH_DELIMITED)


def encode_protobuf(obj: Obj, api_version: str = "", kind: str = "") -> bytes:
    """Encodes an object, a list or a Status (magic + envelope).

    ``api_version`` and ``kind`` name the type when the dict does not (a list's items are
    converted by the list message's ``items`` field).

    Raises:
        StatusError: 500 when the type has no message or a stored value does not fit it.
    """
    api_version = obj.get("apiVersion") or api_version
    kind = obj.get("kind") or kind
    return _envelope(obj, api_version, kind)


def encode_watch_frame(event_type: str, obj: Obj, api_version: str = "", kind: str = "") -> bytes:
    """Encodes one watch event as a length-prefixed ``WatchEvent`` frame."""
    raw_extension = _delimited(1, encode_protobuf(obj, api_version, kind))
    body = _delimited(1, event_type.encode()) + _delimited(2, raw_extension)
    return struct.pack(">I", len(body)) + body


def read_watch_frames(data: bytes) -> tuple[list[tuple[str, Obj]], bytes]:
    """Splits a protobuf watch stream into (type, object) events and the incomplete rest.

    Raises:
        StatusError: 400 for a frame that does not decode.
    """
    events: list[tuple[str, Obj]] = []
    pos = 0
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">I", data, pos)
        if len(data) - pos - 4 < size:
            break
        event: Any = _message(_WATCH_EVENT)
        try:
            event.ParseFromString(data[pos + 4 : pos + 4 + size])
        except DecodeError as exc:
            raise se.bad_request(f"unable to decode a watch frame: {exc}") from exc
        events.append((str(event.type), decode_protobuf(bytes(event.object.raw))))
        pos += 4 + size
    return events, data[pos:]
