"""Decoding of Kubernetes protobuf request bodies for the few kinds kubectl creates that way.

``kubectl create namespace|configmap|secret|serviceaccount`` sends
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\0`` and a runtime.Unknown envelope
around the typed message. Responses are JSON (kubectl also accepts it). Other kinds get 415.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
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


def _meta(buf: bytes) -> Obj:
    out: Obj = {}
    strings = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    for num, _, v in _fields(buf):
        if num in strings:
            out[strings[num]] = v.decode()
        elif num in (11, 12):
            k, val = _map_entry(v)
            out.setdefault("labels" if num == 11 else "annotations", {})[k] = val.decode()
        elif num == 14:
            out.setdefault("finalizers", []).append(v.decode())
    return out


def _namespace(buf: bytes) -> Obj:
    out: Obj = {}
    for num, _, v in _fields(buf):
        if num == 1:
            out["metadata"] = _meta(v)
    return out


def _configmap(buf: bytes) -> Obj:
    out: Obj = {}
    for num, wt, v in _fields(buf):
        if num == 1:
            out["metadata"] = _meta(v)
        elif num == 2:
            k, val = _map_entry(v)
            out.setdefault("data", {})[k] = val.decode()
        elif num == 3:
            k, val = _map_entry(v)
            out.setdefault("binaryData", {})[k] = base64.b64encode(val).decode()
        elif num == 4 and wt == 0:
            out["immutable"] = bool(v)
    return out


def _secret(buf: bytes) -> Obj:
    out: Obj = {}
    for num, wt, v in _fields(buf):
        if num == 1:
            out["metadata"] = _meta(v)
        elif num == 2:
            k, val = _map_entry(v)
            out.setdefault("data", {})[k] = base64.b64encode(val).decode()
        elif num == 3:
            out["type"] = v.decode()
        elif num == 4:
            k, val = _map_entry(v)
            out.setdefault("stringData", {})[k] = val.decode()
        elif num == 5 and wt == 0:
            out["immutable"] = bool(v)
    return out


def _serviceaccount(buf: bytes) -> Obj:
    out: Obj = {}
    for num, wt, v in _fields(buf):
        if num == 1:
            out["metadata"] = _meta(v)
        elif num == 4 and wt == 0:
            out["automountServiceAccountToken"] = bool(v)
    return out


_DECODERS: dict[tuple[str, str], Callable[[bytes], Obj]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Secret"): _secret,
    ("v1", "ServiceAccount"): _serviceaccount,
}


def decode_protobuf(body: bytes) -> Obj:
    """Decodes a protobuf-encoded object into its JSON form.

    Raises:
        StatusError: 415 for a kind this server cannot decode, 400 for a malformed body.
    """
    if not body.startswith(_MAGIC):
        raise se.bad_request("protobuf body without the k8s magic prefix")
    api_version = kind = ""
    raw = b""
    try:
        for num, _, v in _fields(body[len(_MAGIC) :]):
            if num == 1:
                for tnum, _, tv in _fields(v):
                    if tnum == 1:
                        api_version = tv.decode()
                    elif tnum == 2:
                        kind = tv.decode()
            elif num == 2:
                raw = v
        decoder = _DECODERS.get((api_version, kind))
        if decoder is None:
            raise se.unsupported_media_type(f"{PROTOBUF} ({api_version}/{kind})")
        obj = decoder(raw)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise se.bad_request(f"unable to decode protobuf body: {exc}") from exc
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj
