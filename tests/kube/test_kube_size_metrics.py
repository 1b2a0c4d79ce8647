"""Request and response sizes and DNS lookups are measured where client-go measures them."""

from __future__ import annotations

import socket
from typing import Any

import orjson
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.utils import floatToGoString

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.errors import NotFound, TransportError
from rayop.kube.metrics import DNS_BUCKETS, SIZE_BUCKETS, RestClientMetrics
from rayop.kube.resources import PODS
from rayop.testing import FakeClock

from .kube_fakes import FakeApiServer, json_response, status_body

PODS_PATH = "/api/v1/namespaces/ns/pods"
POD = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "ns"}}


def _histogram(registry: CollectorRegistry, name: str, **labels: str) -> tuple[float, float]:
    """(count, sum) of one labelled histogram; (0, 0) when never observed."""
    count = registry.get_sample_value(f"{name}_count", labels)
    total = registry.get_sample_value(f"{name}_sum", labels)
    return (count or 0.0, total or 0.0)


def _client(
    config: KubeConfig, registry: CollectorRegistry | RestClientMetrics, clock: FakeClock
) -> KubeClient:
    metrics = registry if isinstance(registry, RestClientMetrics) else RestClientMetrics(registry)
    return KubeClient(config, qps=-1, metrics=metrics, clock=clock)


def _recorded(replies: list[bytes], obj: dict[str, Any], status: int = 200) -> web.Response:
    """A JSON response whose body is appended to ``replies``."""
    response = json_response(obj, status)
    assert isinstance(response.body, bytes)
    replies.append(response.body)
    return response


async def test_each_attempt_s_body_and_each_call_s_final_response_are_measured(
    api: FakeApiServer, clock: FakeClock
) -> None:
    replies: list[bytes] = []
    attempts = 0

    @api.route("POST", PODS_PATH)
    async def create(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        if attempts == 1:  # the first attempt is throttled and retried
            return web.Response(text="slow down", status=429, headers={"Retry-After": "1"})
        return _recorded(replies, orjson.loads(await request.read()), 201)

    @api.route("GET", f"{PODS_PATH}/p")
    async def get(request: web.Request) -> web.Response:
        return _recorded(replies, POD)

    @api.route("GET", f"{PODS_PATH}/missing")
    async def missing(request: web.Request) -> web.Response:
        return _recorded(replies, status_body(404, "NotFound", 'pods "missing" not found'), 404)

    registry = CollectorRegistry()
    config = KubeConfig.for_server(api.url)
    host = config.host
    async with _client(config, registry, clock) as kube:
        await kube.create(PODS, POD, namespace="ns")
        await kube.get(PODS, "p", namespace="ns")
        with pytest.raises(NotFound):  # a Status body: measured too
            await kube.get(PODS, "missing", namespace="ns")
    sent = [r.body for r in api.requests if r.method == "POST"]
    assert len(sent) == 2 and sent[0] == sent[1]
    assert _histogram(registry, "rest_client_request_size_bytes", verb="POST", host=host) == (
        2,
        2 * len(sent[0]),
    )  # both attempts
    assert _histogram(registry, "rest_client_request_size_bytes", verb="GET", host=host) == (2, 0)
    created, got, status = replies
    assert _histogram(registry, "rest_client_response_size_bytes", verb="POST", host=host) == (
        1,
        len(created),
    )  # the final response only, not the 429's
    assert _histogram(registry, "rest_client_response_size_bytes", verb="GET", host=host) == (
        2,
        len(got) + len(status),
    )


async def test_watches_are_not_measured(api: FakeApiServer, clock: FakeClock) -> None:
    @api.route("GET", PODS_PATH)
    async def watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(orjson.dumps({"type": "ADDED", "object": POD}) + b"\n")
        await response.write_eof()
        return response

    registry = CollectorRegistry()
    config = KubeConfig.for_server(api.url)
    async with (
        _client(config, registry, clock) as kube,
        kube.watch(PODS, namespace="ns") as events,
    ):
        assert len([event async for event in events]) == 1
    labels = {"verb": "GET", "host": config.host}
    for name in ("rest_client_request_size_bytes", "rest_client_response_size_bytes"):
        assert _histogram(registry, name, **labels) == (0, 0)


async def test_no_response_measures_the_request_only(clock: FakeClock) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    registry = CollectorRegistry()
    config = KubeConfig.for_server(f"http://127.0.0.1:{port}")
    async with _client(config, registry, clock) as kube:
        with pytest.raises(TransportError):
            await kube.create(PODS, POD, namespace="ns")
    labels = {"verb": "POST", "host": config.host}
    assert _histogram(registry, "rest_client_request_size_bytes", **labels)[0] == 1
    assert _histogram(registry, "rest_client_response_size_bytes", **labels) == (0, 0)


async def test_a_dns_lookup_is_timed_per_host_and_an_ip_address_needs_none(
    api: FakeApiServer, clock: FakeClock
) -> None:
    @api.route("GET", f"{PODS_PATH}/p")
    async def get(request: web.Request) -> web.Response:
        return json_response(POD)

    registry = CollectorRegistry()
    metrics = RestClientMetrics(registry)
    by_ip = KubeConfig.for_server(api.url)
    async with _client(by_ip, metrics, clock) as kube:
        await kube.get(PODS, "p", namespace="ns")
    assert "rest_client_dns_resolution_duration_seconds_count" not in (
        generate_latest(registry).decode()
    )
    by_name = KubeConfig.for_server(api.url.replace("127.0.0.1", "localhost"))
    async with _client(by_name, metrics, clock) as kube:
        await kube.get(PODS, "p", namespace="ns")
        await kube.get(PODS, "p", namespace="ns")  # the pooled connection: no second lookup
    name = "rest_client_dns_resolution_duration_seconds"
    assert _histogram(registry, name, host="localhost") == (1, 0.0)  # the fake clock stood still


def test_exposition_has_kuberay_s_names_labels_and_buckets() -> None:
    registry = CollectorRegistry()
    metrics = RestClientMetrics(registry)
    metrics.observe_request_size("get", "h:6443", 0)
    metrics.observe_response_size("get", "h:6443", 100)
    metrics.observe_dns_resolution("h", 0.01)
    text = generate_latest(registry).decode()
    for what in ("request", "response"):
        name = f"rest_client_{what}_size_bytes"
        help_text = f"{what.capitalize()} size in bytes. Broken down by verb and host."
        assert f"# HELP {name} {help_text}\n" in text
        assert f"# TYPE {name} histogram" in text
        for bound in SIZE_BUCKETS:
            le = floatToGoString(bound)  # type: ignore[no-untyped-call]
            assert f'{name}_bucket{{host="h:6443",le="{le}",verb="GET"}}' in text
    assert SIZE_BUCKETS == (64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                            16777216)  # fmt: skip
    dns_help = "DNS resolver latency in seconds. Broken down by host."
    assert f"# HELP rest_client_dns_resolution_duration_seconds {dns_help}\n" in text
    for bound in DNS_BUCKETS:
        assert (
            f'rest_client_dns_resolution_duration_seconds_bucket{{host="h",le="{bound}"}}' in text
        )
    assert DNS_BUCKETS == (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30)
