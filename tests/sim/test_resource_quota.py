"""ResourceQuota on the embedded control plane, through HTTP: served (CRUD, watch, discovery,
table), status kept by the controller, and enforced at admission with kube-apiserver's 403s."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from rayop.testing import eventually
from rayop.testing.control_plane import PlaneUnderTest, open_control_plane

from .admission_bodies import pod, resource_quota

NS = "quota"
QUOTAS = f"/api/v1/namespaces/{NS}/resourcequotas"
PODS = f"/api/v1/namespaces/{NS}/pods"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


class Api:
    """Raw HTTP calls to the plane with its admin token."""

    def __init__(self, plane: PlaneUnderTest, http: aiohttp.ClientSession) -> None:
        self.plane, self.http = plane, http
        self.headers = {"Authorization": f"Bearer {plane.cp.token}"}

    async def call(
        self, method: str, path: str, body: Any = None, **headers: str
    ) -> tuple[int, Any]:
        data = None if body is None else orjson.dumps(body)
        hdrs = {**self.headers, "Content-Type": "application/json", **headers}
        async with self.http.request(
            method, self.plane.cp.url + path, data=data, headers=hdrs
        ) as r:
            return r.status, orjson.loads(await r.read())

    def used(self, name: str) -> dict[str, str] | None:
        info = self.plane.cp.store.resources.get("", "v1", "resourcequotas")
        assert info is not None
        quota = self.plane.cp.store.peek(info, NS, name)
        return None if quota is None else (quota.get("status") or {}).get("used")


@asynccontextmanager
async def _api() -> AsyncIterator[Api]:
    async with open_control_plane() as plane, aiohttp.ClientSession() as http:
        api = Api(plane, http)
        await plane.namespace(NS)
        yield api


async def _install(api: Api, quota: dict[str, Any]) -> None:
    code, body = await api.call("POST", QUOTAS, quota)
    assert code == 201, body
    name = quota["metadata"]["name"]
    await eventually(lambda: api.used(name) is not None, what=f"{name} status")


async def test_served_with_discovery_table_watch_and_a_status_the_controller_fills() -> None:
    async with _api() as api:
        code, discovery = await api.call("GET", "/api/v1")
        (entry,) = [r for r in discovery["resources"] if r["name"] == "resourcequotas"]
        assert (entry["kind"], entry["namespaced"], entry["shortNames"]) == (
            "ResourceQuota",
            True,
            ["quota"],
        )
        await _install(
            api,
            resource_quota("compute", pods="4", **{"requests.cpu": "2", "limits.memory": "1Gi"}),
        )
        code, _ = await api.call(
            "POST", PODS, pod("a", requests={"cpu": "500m"}, limits={"memory": "256Mi"})
        )
        assert code == 201
        await eventually(
            lambda: (api.used("compute") or {}).get("pods") == "1", what="pods counted"
        )
        code, got = await api.call("GET", f"{QUOTAS}/compute")
        assert got["status"] == {
            "hard": {"limits.memory": "1Gi", "pods": "4", "requests.cpu": "2"},
            "used": {"limits.memory": "256Mi", "pods": "1", "requests.cpu": "500m"},
        }
        code, table = await api.call(
            "GET", QUOTAS, Accept="application/json;as=Table;v=v1;g=meta.k8s.io"
        )
        assert [c["name"] for c in table["columnDefinitions"]] == [
            "Name",
            "Age",
            "Request",
            "Limit",
        ]
        (row,) = table["rows"]
        assert row["cells"][2:] == ["pods: 1/4, requests.cpu: 500m/2", "limits.memory: 256Mi/1Gi"]
        code, listed = await api.call("GET", QUOTAS)
        rv = listed["metadata"]["resourceVersion"]
        async with api.http.get(
            f"{api.plane.cp.url}{QUOTAS}?watch=1&resourceVersion={rv}", headers=api.headers
        ) as watch:
            code, _ = await api.call("DELETE", f"{QUOTAS}/compute")
            event = orjson.loads(await watch.content.readline())
        assert (code, event["type"], event["object"]["metadata"]["name"]) == (
            200,
            "DELETED",
            "compute",
        )


async def test_the_pod_over_the_count_is_refused_and_a_deleted_pod_frees_its_slot() -> None:
    async with _api() as api:
        await _install(api, resource_quota("count", pods="2"))
        for name in ("p1", "p2"):
            code, body = await api.call("POST", PODS, pod(name))
            assert code == 201, body
        code, err = await api.call("POST", PODS, pod("p3"))
        assert (code, err["reason"]) == (403, "Forbidden")
        assert err["message"] == (
            'pods "p3" is forbidden: exceeded quota: count, requested: pods=1, used: pods=2, limited: pods=2'
        )
        assert err["details"] == {"name": "p3", "kind": "pods"}
        code, _ = await api.call("DELETE", f"{PODS}/p1", {"gracePeriodSeconds": 0})
        await eventually(lambda: (api.used("count") or {}).get("pods") == "1", what="p1 released")
        code, body = await api.call("POST", PODS, pod("p3"))
        assert code == 201, body


async def test_compute_quotas_need_requests_and_cap_cpu_memory_and_gpus() -> None:
    async with _api() as api:
        hard = {"requests.cpu": "1", "requests.memory": "1Gi", "requests.nvidia.com/gpu": "1"}
        await _install(api, resource_quota("compute", **hard))
        code, err = await api.call("POST", PODS, pod("bare"))
        assert (code, err["message"]) == (
            403,
            'pods "bare" is forbidden: failed quota: compute: must specify requests.cpu for: c; '
            "requests.memory for: c",
        )
        code, err = await api.call(
            "POST", PODS, pod("big", requests={"cpu": "1500m", "memory": "1Gi"})
        )
        assert err["message"] == (
            'pods "big" is forbidden: exceeded quota: compute, requested: requests.cpu=1500m, '
            "used: requests.cpu=0, limited: requests.cpu=1"
        )
        gpus = pod("gpu", requests={"cpu": "1", "memory": "512Mi"}, limits={"nvidia.com/gpu": "2"})
        code, err = await api.call("POST", PODS, gpus)
        assert err["message"] == (
            'pods "gpu" is forbidden: exceeded quota: compute, requested: requests.nvidia.com/gpu=2, '
            "used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1"
        )
        fits = pod("fits", limits={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})
        code, body = await api.call("POST", PODS, fits)  # limits stand for the requests
        assert code == 201, body
        assert api.used("compute") == {
            "requests.cpu": "1",
            "requests.memory": "1Gi",
            "requests.nvidia.com/gpu": "1",
        }


async def test_count_of_any_resource_and_dry_run_charges_nothing() -> None:
    async with _api() as api:
        await _install(api, resource_quota("objects", **{"count/configmaps": "1"}))
        await eventually(lambda: api.used("objects") is not None, what="status")
        taken = int((api.used("objects") or {})["count/configmaps"])  # kube-root-ca.crt, if any
        for i in range(1 - taken):
            code, body = await api.call("POST", CMS, {"metadata": {"name": f"cm{i}"}})
            assert code == 201, body
        code, err = await api.call("POST", CMS + "?dryRun=All", {"metadata": {"name": "more"}})
        assert (code, err["message"]) == (
            403,
            'configmaps "more" is forbidden: exceeded quota: objects, requested: count/configmaps=1, '
            "used: count/configmaps=1, limited: count/configmaps=1",
        )


async def test_concurrent_creates_cannot_both_take_the_last_slot() -> None:
    async with _api() as api:
        await _install(api, resource_quota("last", pods="3"))
        results = await asyncio.gather(*(api.call("POST", PODS, pod(f"r{i}")) for i in range(8)))
        codes = sorted(code for code, _ in results)
        assert codes == [201] * 3 + [403] * 5
        assert api.used("last") == {"pods": "3"}


async def test_a_pod_that_ends_frees_its_compute() -> None:
    async with _api() as api:
        await _install(api, resource_quota("cpu", **{"requests.cpu": "1"}))
        code, body = await api.call("POST", PODS, pod("job", requests={"cpu": "1"}))
        assert code == 201, body
        code, ended = await api.call("GET", f"{PODS}/job")
        ended["status"] = {**(ended.get("status") or {}), "phase": "Succeeded"}
        code, body = await api.call("PUT", f"{PODS}/job/status", ended)
        assert code == 200, body
        await eventually(lambda: (api.used("cpu") or {}).get("requests.cpu") == "0", what="freed")
        code, body = await api.call("POST", PODS, pod("next", requests={"cpu": "1"}))
        assert code == 201, body
