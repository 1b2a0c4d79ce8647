"""A client's mistakes get a 4xx Status from the embedded API server, never a 5xx or a hang.

Each case here was a 500 (or a watch that never ended) before its fix; the fuzzing of
tests/sim/test_fuzz_requests.py found most of them.
"""

from __future__ import annotations

import asyncio

import pytest

from .server_harness import POD, open_harness, pod


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
    method: str, path: str, params: dict[str, str]
) -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        code, body = await asyncio.wait_for(h.call(method, path, **params), 10)
        name = next(k for k in params if k != "watch")
        _assert_status(code, body, 400, f'{name}: strconv.ParseInt: parsing "{params[name]}"')
