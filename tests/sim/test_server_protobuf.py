"""kubectl's protobuf request bodies for namespaces, configmaps, secrets and service accounts."""

from __future__ import annotations

from server_harness import open_harness


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    tm = _field(1, api_version.encode()) + _field(2, kind.encode())
    return (
        b"k8s\x00"
        + _field(1, tm)
        + _field(2, raw)
        + _field(4, b"application/vnd.kubernetes.protobuf")
    )


def _entry(k: str, v: bytes) -> bytes:
    return _field(1, k.encode()) + _field(2, v)


async def test_protobuf_configmap_secret_and_namespace_are_decoded() -> None:
    async with open_harness() as h:
        meta = _field(1, b"cm") + _field(11, _entry("app", b"x"))
        body = _envelope("v1", "ConfigMap", _field(1, meta) + _field(2, _entry("a", b"b")))
        ctype = "application/vnd.kubernetes.protobuf"
        code, cm = await h.call("POST", "/api/v1/namespaces/default/configmaps", body, ctype=ctype)
        assert code == 201, cm
        assert cm["data"] == {"a": "b"} and cm["metadata"]["labels"] == {"app": "x"}
        body = _envelope("v1", "Secret", _field(1, _field(1, b"s")) + _field(2, _entry("p", b"q")))
        code, sec = await h.call("POST", "/api/v1/namespaces/default/secrets", body, ctype=ctype)
        assert code == 201 and sec["data"] == {"p": "cQ=="} and sec["type"] == "Opaque"
        body = _envelope("v1", "Namespace", _field(1, _field(1, b"team")))
        code, ns = await h.call("POST", "/api/v1/namespaces", body, ctype=ctype)
        assert code == 201 and ns["status"]["phase"] == "Active"
        body = _envelope("apps/v1", "Deployment", b"")
        code, err = await h.call("POST", "/api/v1/namespaces/default/configmaps", body, ctype=ctype)
        assert code == 415 and err["reason"] == "UnsupportedMediaType"
