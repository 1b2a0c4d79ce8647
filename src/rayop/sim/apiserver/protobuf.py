"""Decoding of Kubernetes protobuf request bodies for the few kinds kubectl creates that way.

``kubectl create namespace|configmap|secret|serviceaccount`` sends
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\0`` and a runtime.Unknown envelope
around the typed message. Responses are JSON (kubectl also accepts it). Other kinds get 415.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from enum import Enum
from typing import Any

from rayop.sim.machinery import errors as se

__all__ = ["PROTOBUF", "decode_protobuf"]

PROTOBUF = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
Obj = dict[str, Any]


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """Yields (field number, wire type, value) of a message; value is int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(buf, pos)
            yield num, wt, val
        elif wt == 2:
            ln, pos = _varint(buf, pos)
            yield num, wt, buf[pos : pos + ln]
            pos += ln
        elif wt == 1:
            yield num, wt, buf[pos : pos + 8]
            pos += 8
        elif wt == 5:
            yield num, wt, buf[pos : pos + 4]
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wt}")


def _map_entry(buf: bytes) -> tuple[str, bytes]:
    key, val = "", b""
    for num, _, v in _fields(buf):
        if num == 1:
            key = v.decode()
        elif num == 2:
            val = v
    return key, val


class _As(Enum):
    """How a message field becomes JSON."""

    TEXT = "a string"
    FLAG = "a bool (varint)"
    BYTES = "raw bytes"
    TEXTS = "a repeated string"
    TEXT_MAP = "a map of strings"
    BASE64_MAP = "a map of bytes, base64-encoded"


Fields = dict[int, tuple[str, "_As | Fields"]]
"""A message's field numbers -> (JSON key, how to decode it or the nested message's fields)."""

_OBJECT_META: Fields = {
    1: ("name", _As.TEXT),
    2: ("generateName", _As.TEXT),
    3: ("namespace", _As.TEXT),
    5: ("uid", _As.TEXT),
    6: ("resourceVersion", _As.TEXT),
    11: ("labels", _As.TEXT_MAP),
    12: ("annotations", _As.TEXT_MAP),
    14: ("finalizers", _As.TEXTS),
}
_ENVELOPE: Fields = {  # runtime.Unknown: TypeMeta and the raw typed message
    1: ("typeMeta", {1: ("apiVersion", _As.TEXT), 2: ("kind", _As.TEXT)}),
    2: ("raw", _As.BYTES),
}
_KINDS: dict[tuple[str, str], Fields] = {  # beside the ObjectMeta every object has at field 1
    ("v1", "Namespace"): {},
    ("v1", "ConfigMap"): {
        2: ("data", _As.TEXT_MAP),
        3: ("binaryData", _As.BASE64_MAP),
        4: ("immutable", _As.FLAG),
    },
    ("v1", "Secret"): {
        2: ("data", _As.BASE64_MAP),
        3: ("type", _As.TEXT),
        4: ("stringData", _As.TEXT_MAP),
        5: ("immutable", _As.FLAG),
    },
    ("v1", "ServiceAccount"): {4: ("automountServiceAccountToken", _As.FLAG)},
}


def _decode(buf: bytes, fields: Fields) -> Obj:
    """Decodes one message by its field table; unknown fields are skipped."""
    out: Obj = {}
    for num, wt, v in _fields(buf):
        spec = fields.get(num)
        if spec is None:
            continue
        key, how = spec
        if isinstance(how, dict):
            out[key] = _decode(v, how)
        elif how is _As.TEXT:
            out[key] = v.decode()
        elif how is _As.FLAG:
            if wt == 0:
                out[key] = bool(v)
        elif how is _As.BYTES:
            out[key] = v
        elif how is _As.TEXTS:
            out.setdefault(key, []).append(v.decode())
        else:
            k, val = _map_entry(v)
            text = base64.b64encode(val).decode() if how is _As.BASE64_MAP else val.decode()
            out.setdefault(key, {})[k] = text
    return out


def decode_protobuf(body: bytes) -> Obj:
    """Decodes a protobuf-encoded object into its JSON form.

    Raises:
        StatusError: 415 for a kind this server cannot decode, 400 for a malformed body.
    """
    if not body.startswith(_MAGIC):
        raise se.bad_request("protobuf body without the k8s magic prefix")
    try:
        envelope = _decode(body[len(_MAGIC) :], _ENVELOPE)
        type_meta = envelope.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        fields = _KINDS.get((api_version, kind))
        if fields is None:
            raise se.unsupported_media_type(f"{PROTOBUF} ({api_version}/{kind})")
        obj = _decode(envelope.get("raw", b""), {1: ("metadata", _OBJECT_META), **fields})
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise se.bad_request(f"unable to decode protobuf body: {exc}") from exc
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj
