"""Client-side throttling is a token bucket whose waits show in the metrics (T1-T3, §3.3)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.metrics import LATENCY_BUCKETS, RestClientMetrics
from rayop.kube.resources import PODS
from rayop.kube.throttle import TokenBucket
from rayop.testing import FakeClock

from .kube_fakes import FakeApiServer, json_response

POD_PATH = "/api/v1/namespaces/ns/pods/p"


def limiter(registry: CollectorRegistry, host: str, what: str) -> float:
    value = registry.get_sample_value(
        f"rest_client_rate_limiter_duration_seconds_{what}", {"verb": "GET", "host": host}
    )
    return 0.0 if value is None else value


@pytest.fixture
def pod_route(api: FakeApiServer) -> None:
    @api.route("GET", POD_PATH)
    async def handler(request: web.Request) -> web.Response:
        return json_response({"metadata": {"name": "p"}})


def test_bucket_starts_full_then_refills_at_qps(clock: FakeClock) -> None:
    bucket = TokenBucket(5, 2, clock=clock)
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    # the next reservations queue up behind each other, in arrival order
    assert bucket.reserve() == pytest.approx(0.2)
    assert bucket.reserve() == pytest.approx(0.4)
    clock.step(10.0)  # a long idle refills to burst, not beyond
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.2])


def test_negative_qps_disables_and_zero_is_refused(clock: FakeClock) -> None:
    off = TokenBucket(-1, 0, clock=clock)
    assert not off.enabled
    assert all(off.reserve() == 0.0 for _ in range(1000))
    with pytest.raises(ValueError):
        TokenBucket(0, 10, clock=clock)


@pytest.mark.usefixtures("pod_route")
async def test_qps5_burst1_six_requests_wait_one_second_in_total(
    api: FakeApiServer, clock: FakeClock
) -> None:
    registry = CollectorRegistry()
    config = KubeConfig.for_server(api.url)
    metrics = RestClientMetrics(registry)
    async with KubeClient(config, qps=5, burst=1, metrics=metrics, clock=clock) as kube:
        for _ in range(6):
            await kube.get(PODS, "p", namespace="ns")
    assert clock.sleeps == pytest.approx([0.2] * 5)
    assert limiter(registry, config.host, "count") == 6
    assert limiter(registry, config.host, "sum") == pytest.approx(1.0)


@pytest.mark.looptime
@pytest.mark.usefixtures("pod_route")
async def test_concurrent_requests_are_spread_over_time_on_the_loop_clock(
    api: FakeApiServer,
) -> None:
    registry = CollectorRegistry()
    config = KubeConfig.for_server(api.url)
    loop = asyncio.get_running_loop()
    async with KubeClient(config, qps=5, burst=1, metrics=RestClientMetrics(registry)) as kube:
        start = loop.time()
        await asyncio.gather(*(kube.get(PODS, "p", namespace="ns") for _ in range(6)))
        elapsed = loop.time() - start
    assert elapsed == pytest.approx(1.0, abs=0.05)
    # waits of 0, 0.2, 0.4, 0.6, 0.8 and 1.0 s: arrival order, no overtaking
    assert limiter(registry, config.host, "count") == 6
    assert limiter(registry, config.host, "sum") == pytest.approx(3.0, abs=0.1)


@pytest.mark.usefixtures("pod_route")
async def test_disabled_throttling_never_observes_the_limiter(
    api: FakeApiServer, clock: FakeClock
) -> None:
    registry = CollectorRegistry()
    config = KubeConfig.for_server(api.url)
    async with KubeClient(config, qps=-1, metrics=RestClientMetrics(registry), clock=clock) as kube:
        for _ in range(50):
            await kube.get(PODS, "p", namespace="ns")
    assert clock.sleeps == []
    assert limiter(registry, config.host, "count") == 0
    text = generate_latest(registry).decode()
    host = config.host
    assert f'rest_client_requests_total{{code="200",host="{host}",method="GET"}} 50.0' in text


@pytest.mark.usefixtures("pod_route")
async def test_exposition_has_client_go_names_labels_and_buckets(
    api: FakeApiServer, clock: FakeClock
) -> None:
    registry = CollectorRegistry()
    config = KubeConfig.for_server(api.url)
    async with KubeClient(
        config, qps=10, burst=1, metrics=RestClientMetrics(registry), clock=clock
    ) as kube:
        await kube.get(PODS, "p", namespace="ns")
        await kube.request("GET", "/nope")
    text = generate_latest(registry).decode()
    assert "# TYPE rest_client_requests_total counter" in text
    assert "# TYPE rest_client_request_duration_seconds histogram" in text
    assert "# TYPE rest_client_rate_limiter_duration_seconds histogram" in text
    host = config.host
    assert f'rest_client_requests_total{{code="404",host="{host}",method="GET"}} 1.0' in text
    for name in (
        "rest_client_request_duration_seconds",
        "rest_client_rate_limiter_duration_seconds",
    ):
        for bound in LATENCY_BUCKETS:
            assert f'{name}_bucket{{host="{host}",le="{bound}",verb="GET"}}' in text
    assert LATENCY_BUCKETS == (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)


async def test_connection_failures_count_as_error_code(clock: FakeClock) -> None:
    import socket

    from rayop.kube.errors import TransportError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    registry = CollectorRegistry()
    config = KubeConfig.for_server(f"http://127.0.0.1:{port}")
    async with KubeClient(config, qps=-1, metrics=RestClientMetrics(registry), clock=clock) as kube:
        with pytest.raises(TransportError):
            await kube.get(PODS, "p", namespace="ns")
    labels = {"code": "<error>", "method": "GET", "host": config.host}
    assert registry.get_sample_value("rest_client_requests_total", labels) == 1
