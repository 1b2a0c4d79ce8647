"""Malformed Ray dashboard answers: wrong JSON, wrong types, truncated, huge, HTML, wrong
statuses. Every call of the dashboard client returns its typed answer or raises one of its own
errors (DashboardError and subclasses), in bounded time; nothing else escapes it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import given
from hypothesis import strategies as st

from rayop.controllers.dashboard.client import DashboardClient, DashboardError, DashboardRequest
from rayop.controllers.dashboard.models import JobInfo, JobSubmitRequest, ServeDetails

from .budget import fuzz_settings

CALL_SECONDS = 5.0

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=False), st.text(max_size=30))
_JSON = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.text(max_size=15), inner, max_size=6)),
    max_leaves=20,
)
_JOB_KEYS = ["status", "submission_id", "job_id", "start_time", "end_time", "message",
             "entrypoint", "metadata", "runtime_env", "error_type", "driver_info", "type"]
_SERVE_KEYS = ["applications", "deploy_mode", "http_options", "proxy_location", "controller_info"]


@st.composite
def _shaped(draw: st.DrawFn) -> Any:
    """JSON shaped like an answer with each field of any type: jobs, a job list, Serve details."""
    keys = draw(st.sampled_from([_JOB_KEYS, _SERVE_KEYS]))
    obj = {k: draw(_JSON) for k in draw(st.lists(st.sampled_from(keys), unique=True))}
    if "applications" in obj and draw(st.booleans()):
        obj["applications"] = {
            draw(st.text(max_size=8)): {
                "status": draw(_JSON), "message": draw(_JSON), "deployments": draw(_JSON),
                "route_prefix": draw(_JSON),
            }
        }
    return draw(st.sampled_from([obj, [obj], [obj, 5], {"stopped": draw(_JSON)}]))


@st.composite
def answers(draw: st.DrawFn) -> tuple[int, bytes]:
    """A (status, body) a broken or hostile dashboard might give."""
    status = draw(st.sampled_from([200, 200, 200, 201, 204, 301, 400, 401, 404, 500, 502, 503,
                                   504, 599]))
    how = draw(st.sampled_from(["shaped", "json", "truncated", "html", "binary", "huge", "empty",
                                "deep", "bigint", "dup"]))
    if how == "shaped":
        body = json.dumps(draw(_shaped())).encode()
    elif how == "json":
        body = json.dumps(draw(_JSON)).encode()
    elif how == "truncated":
        whole = json.dumps(draw(_shaped())).encode()
        body = whole[: draw(st.integers(0, max(0, len(whole) - 1)))]
    elif how == "html":
        body = b"<html><body><h1>502 Bad Gateway</h1>" + b"<p>x</p>" * draw(st.integers(0, 99))
    elif how == "binary":
        body = draw(st.binary(max_size=300))
    elif how == "huge":
        body = b'{"status": "RUNNING", "message": "' + b"x" * draw(
            st.sampled_from([10_000, 1_000_000, 8_000_000])) + b'"}'
    elif how == "empty":
        body = b""
    elif how == "deep":
        depth = draw(st.sampled_from([100, 1000, 100_000]))
        body = b"[" * depth + b"]" * depth
    elif how == "bigint":
        body = b'{"status": "SUCCEEDED", "start_time": 1' + b"0" * 400 + b', "end_time": -1}'
    else:
        body = b'{"status": "RUNNING", "status": 5, "submission_id": []}'
    return status, body


Call = Callable[[DashboardClient], Awaitable[Any]]
CALLS: dict[str, tuple[Call, Any]] = {
    "get_job_info": (lambda c: c.get_job_info("j"), JobInfo),
    "list_jobs": (lambda c: c.list_jobs(), list),
    "submit_job": (lambda c: c.submit_job(JobSubmitRequest(entrypoint="python x.py", submission_id="j")), str),
    "get_job_log": (lambda c: c.get_job_log("j"), (str, type(None))),
    "stop_job": (lambda c: c.stop_job("j"), bool),
    "delete_job": (lambda c: c.delete_job("j"), type(None)),
    "get_serve_details": (lambda c: c.get_serve_details(), ServeDetails),
    "get_multi_application_status": (lambda c: c.get_multi_application_status(), dict),
    "update_deployments": (lambda c: c.update_deployments({"applications": []}), type(None)),
    "get_version": (lambda c: c.get_version(), dict),
    "check_gcs_health": (lambda c: c.check_gcs_health(), bool),
    "check_serve_health": (lambda c: c.check_serve_health(), type(None)),
}


class _Repeating:
    """A transport answering every request with the same (status, body)."""

    timeout = 2.0

    def __init__(self, answer: tuple[int, bytes]) -> None:
        self.answer = answer

    async def send(self, request: DashboardRequest) -> tuple[int, bytes]:
        return self.answer

    async def close(self) -> None:
        pass


def _check(result: Any, want: Any, name: str) -> None:
    assert isinstance(result, want), (name, type(result))
    if isinstance(result, list):
        assert all(isinstance(j, JobInfo) for j in result), (name, result)


async def _call(client: DashboardClient, name: str) -> None:
    call, want = CALLS[name]
    start = time.monotonic()
    try:
        result = await asyncio.wait_for(call(client), CALL_SECONDS)
    except DashboardError as exc:
        assert str(exc), name  # a clear error of the client's own
    else:
        _check(result, want, name)
    assert time.monotonic() - start < CALL_SECONDS


def test_every_client_call_answers_or_raises_its_own_error_for_any_answer() -> None:
    @fuzz_settings(300)
    @given(answers(), st.sampled_from(sorted(CALLS)))
    def one(answer: tuple[int, bytes], name: str) -> None:
        asyncio.run(_call(DashboardClient(_Repeating(answer)), name))

    one()


def test_over_http_truncated_slow_and_dropped_answers_are_the_client_s_errors() -> None:
    """The same over a real socket, with what only a socket does: a body shorter than its
    Content-Length, a connection closed mid-answer, an answer slower than the timeout."""

    async def run() -> None:
        behaviour: dict[str, Any] = {}

        async def handler(request: web.Request) -> web.StreamResponse:
            how = behaviour["how"]
            if how == "slow":
                await asyncio.sleep(5)
            resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            if how == "short":
                resp.content_length = 1000
            await resp.prepare(request)
            await resp.write(b'{"status": "RUNN')
            if how in ("short", "drop"):
                assert request.transport is not None
                request.transport.close()
                return resp
            await resp.write_eof()
            return resp

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        try:
            base = str(server.make_url("")).rstrip("/")
            for how in ("short", "drop", "slow", "whole"):
                behaviour["how"] = how
                async with DashboardClient.direct(base, timeout=0.5) as client:
                    for name in sorted(CALLS):
                        await _call(client, name)
        finally:
            await server.close()

    asyncio.run(run())
