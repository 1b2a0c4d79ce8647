"""The embedded plane's forward proxy: a process with HTTP_PROXY reaches the simulated heads by
their Service's cluster DNS name and by pod IP, as KubeRay's direct mode needs (the real tier
runs KubeRay itself through it: tests/real/test_kuberay_direct_on_embedded.py)."""

from __future__ import annotations

import aiohttp
import pytest

from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.sim.dashboard.http_proxy import ClusterHttpProxy
from rayop.testing import PlaneUnderTest, eventually, open_control_plane, open_operator

from .raycluster_env import simple_cluster

pytestmark = pytest.mark.timeout(60)


async def _head_ip(plane: PlaneUnderTest, ns: str) -> str:
    pods = await plane.client.list(PODS, namespace=ns, label_selector="ray.io/node-type=head")
    return str(pods["items"][0]["status"]["podIP"])


async def test_the_proxy_reaches_a_head_by_service_name_and_pod_ip() -> None:
    async with (
        open_control_plane() as plane,
        open_operator(plane) as _,
        ClusterHttpProxy(plane.cp) as proxy,
        aiohttp.ClientSession() as session,
    ):
        await plane.namespace("px")
        await plane.create(RAY_CLUSTERS, simple_cluster("c", workers=1), "px")
        await eventually(lambda: plane.raycluster_converged("px", "c"), timeout=30, what="ready")
        by_name = "http://c-head-svc.px.svc.cluster.local:8265/api/version"
        async with session.get(by_name, proxy=proxy.url) as resp:
            assert resp.status == 200
            assert "ray_version" in await resp.json()
        by_ip = f"http://{await _head_ip(plane, 'px')}:8265/api/gcs_healthz"
        async with session.get(by_ip, proxy=proxy.url) as resp:
            assert resp.status == 200
        unknown = "http://nothing.px.svc.cluster.local:8265/api/version"
        async with session.get(unknown, proxy=proxy.url) as resp:
            assert resp.status == 502
            assert "nothing in the embedded plane serves" in await resp.text()
        async with session.get(f"{proxy.url}/api/version") as resp:
            assert resp.status == 400  # origin form: not a proxy request
        async with session.request("CONNECT", proxy.url) as resp:
            assert resp.status == 405
