"""A token bucket per API resource, as KubeRay's controller-runtime client has one client-go REST
client (and so one bucket) per kind (rayop.kube.resource_buckets)."""

from __future__ import annotations

import pytest
from aiohttp import web

from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resource_buckets import resource_of_path
from rayop.kube.resources import PODS, RAY_CLUSTERS, SERVICES
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import FakeClock

from .kube_fakes import FakeApiServer, json_response


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/api/v1/namespaces/ns/pods", "v1/pods"),
        ("/api/v1/namespaces/ns/pods/p?dryRun=All", "v1/pods"),
        ("/api/v1/pods?watch=1", "v1/pods"),
        ("/api/v1/namespaces/ns/pods/p/status", "v1/pods"),
        ("/api/v1/namespaces", "v1/namespaces"),
        ("/api/v1/namespaces/ns", "v1/namespaces"),
        ("/api/v1/watch/namespaces/ns/services", "v1/services"),
        ("/apis/ray.io/v1/namespaces/ns/rayclusters/rc/status", "ray.io/v1/rayclusters"),
        ("/apis/ray.io/v1/rayjobs", "ray.io/v1/rayjobs"),
        ("/apis/ray.io/v1", None),
        ("/api/v1", None),
        ("/version", None),
        ("/apis", None),
    ],
)
def test_the_resource_a_path_names(path: str, resource: str | None) -> None:
    assert resource_of_path(path) == resource


@pytest.fixture
def routes(api: FakeApiServer) -> None:
    for path in (
        "/api/v1/namespaces/ns/pods/p",
        "/api/v1/namespaces/ns/services/s",
        "/apis/ray.io/v1/namespaces/ns/rayclusters/rc",
    ):

        @api.route("GET", path)
        async def handler(request: web.Request) -> web.Response:
            return json_response({"metadata": {"name": "x"}})


@pytest.mark.usefixtures("routes")
async def test_each_resource_spends_a_bucket_of_its_own(
    api: FakeApiServer, clock: FakeClock
) -> None:
    config = KubeConfig.for_server(api.url)
    async with KubeClient(config, qps=5, burst=1, clock=clock, bucket_per_resource=True) as kube:
        await kube.get(PODS, "p", namespace="ns")
        await kube.get(SERVICES, "s", namespace="ns")
        await kube.get(RAY_CLUSTERS, "rc", namespace="ns")
        assert clock.sleeps == [], "one request of each kind: each bucket's burst"
        await kube.get(PODS, "p", namespace="ns")
        assert clock.sleeps == pytest.approx([0.2]), "a second pod request waits for its bucket"
        assert kube.buckets is not None
        assert kube.buckets.resources() == ["ray.io/v1/rayclusters", "v1/pods", "v1/services"]
    # one bucket for every request, as before, unless asked
    clock.sleeps.clear()
    async with KubeClient(config, qps=5, burst=1, clock=clock) as kube:
        await kube.get(PODS, "p", namespace="ns")
        await kube.get(SERVICES, "s", namespace="ns")
        assert clock.sleeps == pytest.approx([0.2])


async def test_the_operators_client_has_a_bucket_per_resource_at_qps_and_burst() -> None:
    settings = OperatorSettings(qps=100, burst=200)
    client = new_client(KubeConfig.for_server("http://127.0.0.1:1"), settings, OperatorMetrics())
    async with client:
        assert client.buckets is not None
        bucket = client.buckets.for_path("/api/v1/namespaces/ns/pods")
        assert (bucket.qps, bucket.burst) == (100, 200)
        assert bucket is not client.buckets.for_path("/api/v1/namespaces/ns/services")
