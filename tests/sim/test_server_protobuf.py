"""Protobuf bodies on the embedded API server: every built-in kind, lists, watches, errors."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from rayop.sim.apiserver.protobuf import (
    PROTOBUF,
    decode_protobuf,
    encode_protobuf,
    read_watch_frames,
)
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.store import Store

from .protobuf_samples import samples
from .server_harness import Harness, open_harness, pod

Obj = dict[str, Any]
_PB_CLIENT = {"Content-Type": PROTOBUF, "Accept": f"{PROTOBUF}, application/json"}
_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def _path(info: ResourceInfo, name: str | None = None) -> str:
    base = "/api/v1" if not info.group else f"/apis/{info.group}/{info.version}"
    ns = "/namespaces/default" if info.namespaced else ""
    return f"{base}{ns}/{info.plural}" + (f"/{name}" if name else "")


async def _pb(
    h: Harness, method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, str, bytes]:
    hdrs = {"Authorization": "Bearer test-token", **_PB_CLIENT, **headers}
    async with h.client.request(method, path, data=body, headers=hdrs) as r:
        return r.status, r.headers.get("Content-Type", ""), await r.read()


def _contains(big: Any, small: Any, path: str = "") -> None:
    """Asserts that every field of ``small`` is in ``big`` with the same value."""
    if isinstance(small, dict):
        assert isinstance(big, dict), path
        for k, v in small.items():
            assert k in big, f"{path}.{k} missing"
            _contains(big[k], v, f"{path}.{k}")
    elif isinstance(small, list):
        assert isinstance(big, list) and len(big) == len(small), path
        for i, (b, s) in enumerate(zip(big, small, strict=True)):
            _contains(b, s, f"{path}[{i}]")
    else:
        assert big == small, f"{path}: {big!r} != {small!r}"


def _served_builtins(h: Harness) -> list[ResourceInfo]:
    return [i for i in h.store.resources.all() if not i.is_custom and not i.crd_name]


async def test_every_served_builtin_kind_round_trips_through_protobuf() -> None:
    objs = samples()
    async with open_harness() as h:
        infos = [i for i in _served_builtins(h) if i.kind != "CustomResourceDefinition"]
        missing = [
            i.api_version + "/" + i.kind for i in infos if (i.api_version, i.kind) not in objs
        ]
        assert not missing, f"no protobuf sample for served kinds {missing}"
        for info in infos:
            sample = objs[(info.api_version, info.kind)]
            code, ctype, raw = await _pb(h, "POST", _path(info), encode_protobuf(sample))
            assert code == 201, (info.kind, raw[:300])
            assert ctype == PROTOBUF, info.kind
            created = decode_protobuf(raw)
            _contains(created, sample, info.kind)
            name = sample["metadata"]["name"]
            code, _, raw = await _pb(h, "GET", _path(info, name))
            assert code == 200
            code, as_json = await h.call("GET", _path(info, name))
            assert code == 200
            assert decode_protobuf(raw) == as_json, info.kind


async def test_lists_and_updates_in_protobuf() -> None:
    async with open_harness() as h:
        info = h.store.resources.get("", "v1", "services")
        assert info is not None
        svc = samples()[("v1", "Service")]
        for i in range(3):
            obj = {**svc, "metadata": {"name": f"s{i}"}}
            assert (await _pb(h, "POST", _path(info), encode_protobuf(obj)))[0] == 201
        code, ctype, raw = await _pb(h, "GET", _path(info) + "?limit=2")
        assert code == 200 and ctype == PROTOBUF
        page = decode_protobuf(raw)
        assert page["kind"] == "ServiceList" and [s["metadata"]["name"] for s in page["items"]] == [
            "s0",
            "s1",
        ]
        assert page["metadata"]["continue"] and page["metadata"]["remainingItemCount"] == 1
        code, as_json = await h.call("GET", _path(info))
        code, _, raw = await _pb(h, "GET", _path(info))
        for item in as_json["items"]:  # a typed list's items carry no type meta in protobuf
            del item["apiVersion"], item["kind"]
        assert decode_protobuf(raw) == as_json
        code, current = await h.call("GET", _path(info, "s0"))
        current["spec"]["ports"][0]["port"] = 9000
        code, _, raw = await _pb(h, "PUT", _path(info, "s0"), encode_protobuf(current))
        assert code == 200 and decode_protobuf(raw)["spec"]["ports"][0]["port"] == 9000
        delete = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        code, _, raw = await _pb(h, "DELETE", _path(info, "s0"), encode_protobuf(delete))
        assert code == 200 and decode_protobuf(raw)["metadata"]["name"] == "s0"


async def test_status_errors_are_protobuf_for_a_protobuf_client() -> None:
    async with open_harness() as h:
        info = h.store.resources.get("", "v1", "pods")
        assert info is not None
        code, ctype, raw = await _pb(h, "GET", _path(info, "nope"))
        assert code == 404 and ctype == PROTOBUF
        status = decode_protobuf(raw)
        assert status["kind"] == "Status" and status["reason"] == "NotFound"
        assert status["details"] == {"name": "nope", "kind": "pods"}
        code, ctype, raw = await _pb(h, "GET", _path(info, "nope"), Accept="application/json")
        assert code == 404 and ctype == "application/json"


async def test_watch_streams_length_prefixed_watch_events() -> None:
    async with open_harness() as h:
        info = h.store.resources.get("", "v1", "configmaps")
        assert info is not None
        cm = samples()[("v1", "ConfigMap")]
        hdrs = {"Authorization": "Bearer test-token", **_PB_CLIENT}
        url = _path(info) + "?watch=true&timeoutSeconds=5"
        async with h.client.get(url, headers=hdrs) as r:
            assert r.status == 200
            assert r.headers["Content-Type"] == f"{PROTOBUF};stream=watch"
            assert (await _pb(h, "POST", _path(info), encode_protobuf(cm)))[0] == 201
            _, as_json = await h.call("GET", _path(info, cm["metadata"]["name"]))
            buf = b""
            events: list[tuple[str, Obj]] = []
            while not events:
                buf += await asyncio.wait_for(r.content.readany(), 5)
                events, buf = read_watch_frames(buf)
        assert events == [("ADDED", as_json)]


async def test_expired_watch_reports_a_protobuf_status_frame() -> None:
    async with open_harness(store=Store(graceful_pod_deletion=False, history_size=3)) as h:
        info = h.store.resources.get("", "v1", "pods")
        assert info is not None
        for i in range(6):
            assert (await h.call("POST", _path(info), pod(f"p{i}")))[0] == 201
        hdrs = {"Authorization": "Bearer test-token", **_PB_CLIENT}
        async with h.client.get(_path(info) + "?watch=true&resourceVersion=1", headers=hdrs) as r:
            events, _ = read_watch_frames(await r.read())
        assert events[0][0] == "ERROR" and events[0][1]["code"] == 410


async def test_malformed_protobuf_is_a_400_that_says_what_was_wrong() -> None:
    async with open_harness() as h:
        info = h.store.resources.get("", "v1", "pods")
        assert info is not None
        code, _, raw = await _pb(h, "POST", _path(info), b"not protobuf")
        assert code == 400 and b"magic" in raw
        code, _, raw = await _pb(h, "POST", _path(info), b"k8s\x00\x0a\xff\xff")
        assert code == 400 and b"unable to decode" in raw
        body = encode_protobuf({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
        code, _, raw = await _pb(h, "POST", _path(info), body[:-3])
        assert code == 400 and decode_protobuf(raw)["reason"] == "BadRequest"
        code, _, raw = await _pb(
            h, "POST", _path(info), b"x", **{"Content-Type": "text/plain", "Accept": "*/*"}
        )
        status = orjson.loads(raw)
        assert code == 415 and status["message"].endswith(
            "accepted media types include: application/json, application/yaml, "
            "application/vnd.kubernetes.protobuf"
        )


async def test_custom_resources_stay_json_only() -> None:
    async with open_harness() as h:
        assert (
            await h.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _CRD)
        )[0] == 201
        path = "/apis/example.com/v1/namespaces/default/widgets"
        widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
        code, _, raw = await _pb(
            h, "POST", path, orjson.dumps(widget), **{"Content-Type": "application/json"}
        )
        assert code == 201
        code, ctype, raw = await _pb(h, "GET", path + "/w")
        assert code == 200 and ctype == "application/json"  # protobuf, json: JSON is chosen
        code, ctype, raw = await _pb(h, "GET", path + "/w", Accept=PROTOBUF)
        assert code == 406 and orjson.loads(raw)["message"] == (
            "only the following media types are accepted: application/json, application/yaml"
        )
        code, _, raw = await _pb(
            h, "POST", path, encode_protobuf({"apiVersion": "v1", "kind": "Pod"})
        )
        assert code == 415 and orjson.loads(raw)["message"].endswith(
            "accepted media types include: application/json, application/yaml"
        )


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("", "application/json"),
        ("*/*", "application/json"),
        (f"{PROTOBUF}, */*", PROTOBUF),
        (f"application/json;q=0.5, {PROTOBUF}", PROTOBUF),
        (f"{PROTOBUF};q=0.1, application/json", "application/json"),
        ("application/yaml", "application/yaml"),
    ],
)
async def test_accept_header_picks_the_response_type(accept: str, expected: str) -> None:
    async with open_harness() as h:
        hdrs = {"Authorization": "Bearer test-token", "Accept": accept}
        async with h.client.get("/api/v1/namespaces/default", headers=hdrs) as r:
            assert r.status == 200 and r.headers["Content-Type"] == expected
            raw = await r.read()
        if expected == PROTOBUF:
            assert decode_protobuf(raw)["metadata"]["name"] == "default"
        async with h.client.get(
            "/api/v1/namespaces/default", headers={**hdrs, "Accept": "text/html"}
        ) as r:
            assert r.status == 406


async def test_token_request_in_protobuf() -> None:
    async with open_harness() as h:
        sa = samples()[("v1", "ServiceAccount")]
        assert (await h.call("POST", "/api/v1/namespaces/default/serviceaccounts", sa))[0] == 201
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"audiences": ["ray"], "expirationSeconds": 600},
        }
        path = f"/api/v1/namespaces/default/serviceaccounts/{sa['metadata']['name']}/token"
        code, ctype, raw = await _pb(h, "POST", path, encode_protobuf(request))
        assert code == 201 and ctype == PROTOBUF
        issued = decode_protobuf(raw)
        assert issued["kind"] == "TokenRequest" and issued["status"]["token"]
        assert issued["spec"] == {"audiences": ["ray"], "expirationSeconds": 600}


async def test_a_go_clients_unset_target_port_defaults_to_the_port() -> None:
    """client-go writes every non-pointer field: an unset targetPort arrives as 0."""
    async with open_harness() as h:
        info = h.store.resources.get("", "v1", "services")
        assert info is not None
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "head-svc"},
            "spec": {"ports": [{"name": "dashboard", "port": 8265, "targetPort": 0}]},
        }
        code, _, raw = await _pb(h, "POST", _path(info), encode_protobuf(svc))
        assert code == 201
        assert decode_protobuf(raw)["spec"]["ports"][0]["targetPort"] == 8265
