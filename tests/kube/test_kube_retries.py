"""429s and 5xx with Retry-After are retried (T5); everything else fails at once."""

from __future__ import annotations

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from rayop.kube import errors
from rayop.kube.client import MAX_RETRIES, KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.metrics import RestClientMetrics
from rayop.kube.resources import PODS
from rayop.testing import FakeClock

from .kube_fakes import FakeApiServer, json_response, status_body

POD_PATH = "/api/v1/namespaces/ns/pods/p"
APF_TEXT = "Too many requests, please try again later."


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_plain_text_429_is_retried_after_retry_after_then_succeeds(
    api: FakeApiServer, clock: FakeClock
) -> None:
    attempts = 0

    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        if attempts <= 2:
            return web.Response(text=APF_TEXT, status=429, headers={"Retry-After": "3"})
        return json_response({"kind": "Pod", "metadata": {"name": "p"}})

    registry = CollectorRegistry()
    metrics = RestClientMetrics(registry)
    config = KubeConfig.for_server(api.url)
    async with KubeClient(config, qps=100, burst=1, metrics=metrics, clock=clock) as kube:
        pod = await kube.get(PODS, "p", namespace="ns")
    assert pod["metadata"]["name"] == "p"
    assert attempts == 3
    assert clock.sleeps.count(3.0) == 2  # honoured Retry-After twice
    host = config.host
    assert sample(registry, "rest_client_requests_total", code="429", method="GET", host=host) == 2
    assert sample(registry, "rest_client_requests_total", code="200", method="GET", host=host) == 1
    # the bucket was waited on before each of the three attempts
    assert (
        sample(registry, "rest_client_rate_limiter_duration_seconds_count", verb="GET", host=host)
        == 3
    )
    # one call: one duration observation covering both Retry-After sleeps
    assert (
        sample(registry, "rest_client_request_duration_seconds_count", verb="GET", host=host) == 1
    )
    assert (
        sample(registry, "rest_client_request_duration_seconds_sum", verb="GET", host=host) >= 6.0
    )


async def test_429_exhaustion_after_ten_retries_raises_too_many_requests(
    api: FakeApiServer, client: KubeClient, clock: FakeClock
) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=APF_TEXT, status=429, headers={"Retry-After": "1"})

    with pytest.raises(errors.TooManyRequests) as info:
        await client.get(PODS, "p", namespace="ns")
    assert api.count("GET", POD_PATH) == MAX_RETRIES + 1 == 11
    assert clock.sleeps == [1.0] * 10
    status = info.value.status
    assert status["reason"] == "TooManyRequests"
    assert status["code"] == 429
    assert "too many requests" in status["message"]
    assert info.value.retry_after == 1


async def test_json_status_429_is_kept_when_retries_run_out(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        body = status_body(429, "TooManyRequests", "slow down", retryAfterSeconds=2)
        return json_response(body, 429, **{"Retry-After": "2"})

    with pytest.raises(errors.TooManyRequests) as info:
        await client.get(PODS, "p", namespace="ns")
    assert info.value.message == "slow down"
    assert info.value.retry_after == 2


async def test_429_without_retry_after_is_not_retried(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=APF_TEXT, status=429)

    with pytest.raises(errors.TooManyRequests):
        await client.get(PODS, "p", namespace="ns")
    assert api.count("GET", POD_PATH) == 1


async def test_5xx_is_retried_only_with_integer_retry_after(
    api: FakeApiServer, client: KubeClient, clock: FakeClock
) -> None:
    calls = {"503": 0, "500": 0}

    @api.route("POST", "/api/v1/namespaces/ns/pods")
    async def flaky(request: web.Request) -> web.Response:
        calls["503"] += 1
        if calls["503"] == 1:
            return json_response(
                status_body(503, "ServiceUnavailable"), 503, **{"Retry-After": "5"}
            )
        return json_response({"metadata": {"name": "p"}}, 201)

    @api.route("PUT", POD_PATH)
    async def broken(request: web.Request) -> web.Response:
        calls["500"] += 1
        return json_response(status_body(500, "InternalError"), 500, **{"Retry-After": "soon"})

    await client.create(PODS, {"metadata": {"name": "p"}}, namespace="ns")
    assert calls["503"] == 2
    assert clock.sleeps == [5.0]
    with pytest.raises(errors.InternalError):
        await client.update(PODS, {"metadata": {"name": "p", "namespace": "ns"}})
    assert calls["500"] == 1


async def test_401_makes_refreshable_credentials_refresh_once(api: FakeApiServer) -> None:
    class Rotating:
        def __init__(self) -> None:
            self.token = "old"
            self.refreshes = 0

        async def headers(self) -> dict[str, str]:
            return {"Authorization": f"Bearer {self.token}"}

        async def refresh(self) -> bool:
            self.refreshes += 1
            self.token = "new"
            return True

    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer new":
            return json_response(status_body(401, "Unauthorized"), 401)
        return json_response({"metadata": {"name": "p"}})

    creds = Rotating()
    config = KubeConfig(server=api.url, credentials=creds)
    async with KubeClient(config, qps=-1) as kube:
        assert (await kube.get(PODS, "p", namespace="ns"))["metadata"]["name"] == "p"
        creds.token = "stale-again"
        api.routes[("GET", POD_PATH)] = lambda r: _unauthorized()
        with pytest.raises(errors.Unauthorized):
            await kube.get(PODS, "p", namespace="ns")
    assert creds.refreshes == 2  # one per call; the second call gave up after one refresh


async def _unauthorized() -> web.Response:
    return json_response(status_body(401, "Unauthorized"), 401)
