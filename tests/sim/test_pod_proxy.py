"""The pods proxy subresource reaches a ready head pod's simulated Ray ports."""

from __future__ import annotations

import aiohttp

from rayop.kube.resources import PODS
from rayop.testing import eventually, open_control_plane

_HEAD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "rc-head",
        "labels": {"ray.io/node-type": "head", "ray.io/cluster": "rc"},
    },
    "spec": {
        "containers": [
            {
                "name": "ray-head",
                "image": "rayproject/ray",
                "ports": [{"name": "dashboard", "containerPort": 8265}],
            }
        ]
    },
}


async def test_pods_proxy_reaches_the_head_dashboard_and_refuses_what_nothing_serves() -> None:
    async with open_control_plane(crds=False) as plane:
        cp = plane.cp
        await plane.namespace("ns")
        await plane.create(PODS, _HEAD, "ns")
        other = {**_HEAD, "metadata": {"name": "plain", "labels": {"app": "x"}}}
        await plane.create(PODS, other, "ns")
        await eventually(
            lambda: cp.dashboards.resolve_pod("ns", "rc-head", "8265") is not None,
            what="the head's dashboard",
        )
        auth = {"Authorization": f"Bearer {cp.token}"}
        base = f"{cp.url}/api/v1/namespaces/ns/pods"
        async with aiohttp.ClientSession(headers=auth) as http:
            async with http.get(f"{base}/rc-head:8265/proxy/api/version", ssl=False) as r:
                assert r.status == 200, await r.text()
                assert "ray_version" in await r.json()
            async with http.get(f"{base}/plain:8265/proxy/api/version", ssl=False) as r:
                assert r.status == 503
                assert "nothing listens on port 8265" in (await r.json())["message"]
            async with http.get(f"{base}/missing:8265/proxy/", ssl=False) as r:
                assert r.status == 404
