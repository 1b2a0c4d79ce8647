"""Status errors from the server become the right ApiError subclass, keeping the Status."""

from __future__ import annotations

import pytest
from aiohttp import web

from rayop.kube import errors
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resources import PODS, RAY_CLUSTERS

from .kube_fakes import FakeApiServer, json_response, status_body

POD_PATH = "/api/v1/namespaces/ns/pods/p"

CASES = [
    (400, "BadRequest", errors.BadRequest, errors.ClientError),
    (401, "Unauthorized", errors.Unauthorized, errors.ClientError),
    (403, "Forbidden", errors.Forbidden, errors.ClientError),
    (404, "NotFound", errors.NotFound, errors.ClientError),
    (405, "MethodNotAllowed", errors.MethodNotAllowed, errors.ClientError),
    (409, "AlreadyExists", errors.AlreadyExists, errors.ClientError),
    (409, "Conflict", errors.Conflict, errors.ClientError),
    (410, "Gone", errors.Gone, errors.ClientError),
    (410, "Expired", errors.Gone, errors.ClientError),
    (415, "UnsupportedMediaType", errors.UnsupportedMediaType, errors.ClientError),
    (422, "Invalid", errors.Invalid, errors.ClientError),
    (429, "TooManyRequests", errors.TooManyRequests, errors.ClientError),
    (500, "InternalError", errors.InternalError, errors.ServerError),
    (503, "ServiceUnavailable", errors.ServiceUnavailable, errors.ServerError),
    (504, "Timeout", errors.ServerTimeout, errors.ServerError),
    (500, "ServerTimeout", errors.ServerTimeout, errors.ServerError),
]


@pytest.mark.parametrize(("code", "reason", "cls", "base"), CASES)
async def test_status_body_maps_to_exception_class(
    api: FakeApiServer,
    client: KubeClient,
    code: int,
    reason: str,
    cls: type[errors.ApiError],
    base: type[errors.ApiError],
) -> None:
    body = status_body(code, reason, f'pods "p" {reason}', name="p", kind="pods")

    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        return json_response(body, code)

    with pytest.raises(cls) as info:
        await client.get(PODS, "p", namespace="ns")
    err = info.value
    assert isinstance(err, errors.ApiError)
    assert isinstance(err, base)
    assert type(err) is cls
    assert err.status == body
    assert (err.code, err.reason) == (code, reason)
    assert err.message == f'pods "p" {reason}'
    assert err.details["name"] == "p"


async def test_invalid_keeps_causes(api: FakeApiServer, client: KubeClient) -> None:
    causes = [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"}]

    @api.route("POST", "/apis/ray.io/v1/namespaces/ns/rayclusters")
    async def handler(request: web.Request) -> web.Response:
        return json_response(status_body(422, "Invalid", "is invalid", causes=causes), 422)

    with pytest.raises(errors.Invalid) as info:
        await client.create(RAY_CLUSTERS, {"metadata": {"name": "c", "namespace": "ns"}})
    assert info.value.details["causes"] == causes


async def test_plain_text_bodies_get_the_reason_their_code_implies(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="upstream connect error", status=503)

    with pytest.raises(errors.ServiceUnavailable) as info:
        await client.get(PODS, "p", namespace="ns")
    assert info.value.reason == "ServiceUnavailable"
    assert info.value.status["kind"] == "Status"
    assert "upstream connect error" in info.value.message


async def test_non_status_409_on_post_is_already_exists_and_on_put_conflict(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("POST", "/api/v1/namespaces/ns/pods")
    async def post(request: web.Request) -> web.Response:
        return web.Response(text="exists", status=409)

    @api.route("PUT", POD_PATH)
    async def put(request: web.Request) -> web.Response:
        return web.Response(text="stale", status=409)

    pod = {"metadata": {"name": "p", "namespace": "ns"}}
    with pytest.raises(errors.AlreadyExists):
        await client.create(PODS, pod)
    with pytest.raises(errors.Conflict):
        await client.update(PODS, pod)


async def test_connection_refused_is_a_transport_error_chained_to_the_cause() -> None:
    # A port nothing listens on: bind, read the port, close.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with KubeClient(KubeConfig.for_server(f"http://127.0.0.1:{port}"), qps=-1) as kube:
        with pytest.raises(errors.TransportError) as info:
            await kube.get(PODS, "p", namespace="ns")
    assert info.value.code == 0
    assert info.value.__cause__ is not None
    assert not isinstance(info.value, errors.ClientError | errors.ServerError)


async def test_request_timeout_is_reported_as_request_timeout(api: FakeApiServer) -> None:
    import asyncio

    release = asyncio.Event()

    @api.route("GET", POD_PATH)
    async def slow(request: web.Request) -> web.Response:
        await release.wait()
        return json_response({})

    async with KubeClient(KubeConfig.for_server(api.url), qps=-1, timeout=0.05) as kube:
        with pytest.raises(errors.RequestTimeout) as info:
            await kube.get(PODS, "p", namespace="ns")
    release.set()
    assert isinstance(info.value, errors.TransportError)
    assert isinstance(info.value.__cause__, TimeoutError)


def test_error_from_response_without_body_uses_code() -> None:
    err = errors.error_from_response(404, b"", method="GET")
    assert isinstance(err, errors.NotFound)
    assert err.status["status"] == "Failure"
    unknown = errors.error_from_response(418, b"teapot")
    assert type(unknown) is errors.ClientError
    assert unknown.code == 418
