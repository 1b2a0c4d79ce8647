"""A client's mistakes get a 4xx Status from the embedded API server, never a 5xx or a hang.

Each case here was a 500 (or a watch that never ended) before its fix; the fuzzing of
tests/sim/test_fuzz_requests.py found most of them.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import orjson
import pytest

from rayop.sim.apiserver.request_body import MAX_BODY_BYTES, MAX_DEPTH

from .server_harness import AUTH, POD, Harness, open_harness, pod

_PROTOBUF = "application/vnd.kubernetes.protobuf"


def _assert_status(code: int, body: object, want: int, words: str) -> None:
    assert code == want, body
    assert isinstance(body, dict) and body["kind"] == "Status" and body["code"] == want
    assert words in body["message"], body["message"]


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("GET", POD, {"limit": "abc"}),
        ("GET", POD, {"limit": "1.5"}),
        ("GET", POD, {"watch": "true", "timeoutSeconds": "abc"}),
        ("GET", POD, {"watch": "true", "timeoutSeconds": "nan"}),  # was a watch that never ended
        ("GET", POD, {"watch": "true", "timeoutSeconds": "inf"}),
        ("DELETE", POD + "/a", {"gracePeriodSeconds": "soon"}),
    ],
)
async def test_an_integer_query_parameter_that_does_not_parse_is_400_naming_it(
    method: str, path: str, params: dict[str, Any]
) -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        code, body = await asyncio.wait_for(h.call(method, path, **params), 10)
        name = next(k for k in params if k != "watch")
        _assert_status(code, body, 400, f'{name}: strconv.ParseInt: parsing "{params[name]}"')


async def _send_large(h: Harness, method: str, path: str, raw: bytes, ctype: str) -> Any:
    """Sends a body too large for Harness.call (aiohttp wants a stream for it)."""
    headers = {**AUTH, "Content-Type": ctype}
    async with h.client.request(method, path, data=io.BytesIO(raw), headers=headers) as r:
        return r.status, await r.json()


async def test_a_body_over_3_mib_is_413_as_kube_apiserver_answers() -> None:
    async with open_harness() as h:
        big = pod("big")
        big["metadata"]["annotations"] = {"a": "x" * MAX_BODY_BYTES}
        code, body = await _send_large(h, "POST", POD, orjson.dumps(big), "application/json")
        _assert_status(code, body, 413, f"Request entity too large: limit is {MAX_BODY_BYTES}")
        assert body["reason"] == "RequestEntityTooLarge"
        raw = b"{" + b" " * MAX_BODY_BYTES + b"}"
        code, body = await _send_large(
            h, "PATCH", POD + "/big", raw, "application/merge-patch+json"
        )
        _assert_status(code, body, 413, "Request entity too large")
        near = pod("near")
        near["metadata"]["annotations"] = {"a": "x" * (MAX_BODY_BYTES - 4096)}
        code, body = await _send_large(h, "POST", POD, orjson.dumps(near), "application/json")
        assert code != 413, body  # just under the limit is read (the annotation is refused)
        code, _ = await h.call("POST", POD, pod("small"))
        assert code == 201  # the server is fine afterwards


async def test_deep_nesting_is_400_not_a_recursion_error() -> None:
    async with open_harness() as h:
        for raw, ctype in (
            (b"[" * 100_000, "application/json"),  # was 500 (RecursionError in the YAML fallback)
            (b"a: " + b"[" * 5000, "application/yaml"),
        ):
            code, body = await h.call("POST", POD, raw, ctype=ctype)
            _assert_status(code, body, 400, "unable to decode the request body")
        deep: object = "leaf"
        for _ in range(MAX_DEPTH + 5):
            deep = {"d": deep}
        doc = pod("deep")
        doc["metadata"]["annotations"] = deep
        code, body = await h.call("POST", POD, doc)
        _assert_status(code, body, 400, f"nested more than {MAX_DEPTH} levels deep")
        code, body = await h.call("POST", POD, pod("p"))
        assert code == 201
        code, body = await h.call(
            "PATCH",
            POD + "/p",
            {"metadata": {"labels": deep}},
            ctype="application/merge-patch+json",
        )
        _assert_status(code, body, 400, f"nested more than {MAX_DEPTH} levels deep")


async def test_yaml_aliases_that_expand_past_the_bound_are_400() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):  # 10**8 values once expanded, from a few hundred bytes
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("metadata: {name: laughs}")
    async with open_harness() as h:
        code, body = await h.call("POST", POD, "\n".join(lines).encode(), ctype="application/yaml")
        _assert_status(code, body, 400, "excessive aliasing")


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"metadata": {"generateName": 4}}, "metadata.generateName"),  # was 500
        ({"metadata": {"name": "a", "annotations": "s"}}, "metadata.annotations"),
        ({"metadata": {"name": "a"}, "spec": {"containers": 3}}, "spec.containers"),  # was 500
        ({"metadata": {"name": "a", "ownerReferences": "s"}}, "metadata.ownerReferences"),
        (
            {"metadata": {"name": "a"}, "spec": {"containers": [{"name": 1}]}},
            "spec.containers[0].name",
        ),
    ],
)
async def test_a_value_of_the_wrong_type_is_400_naming_the_field(
    doc: dict[str, object], field: str
) -> None:
    """kube-apiserver's typed decode refuses these; stored, ``ownerReferences: "s"`` made every
    protobuf read of the pod a 500."""
    async with open_harness() as h:
        code, body = await h.call("POST", POD, doc)
        _assert_status(code, body, 400, f'Pod in version "v1" cannot be handled as a Pod: {field}')
        code, _ = await h.call("GET", POD, headers={"Accept": _PROTOBUF})
        assert code == 200


async def test_server_side_apply_with_a_non_object_metadata_is_400() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        for name in ("a", "b"):  # an existing object (was 500) and a new one
            code, body = await h.call(
                "PATCH", f"{POD}/{name}", b"{metadata: 5}", ctype="application/apply-patch+yaml"
            )
            _assert_status(code, body, 400, "metadata must be an object")
