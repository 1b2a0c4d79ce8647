"""Direct dashboard connections (KubeRay's default) cost no API server request; the services
proxy is used only under ``--use-kubernetes-proxy``.

On the embedded plane the operator's direct URLs (``<head svc>.<ns>.svc.cluster.local``) are
resolved by the plane's simulated cluster DNS (``ServiceDns``), so a RayJob in HTTPMode and a
RayService run to completion either way while the audit shows where their traffic went.
"""

from __future__ import annotations

import pytest

from rayop.kube.resources import RAY_JOBS, RAY_SERVICES
from rayop.sim.dashboard.service_dns import ServiceDns, split_service_url
from rayop.testing import ALL_KINDS, PlaneUnderTest, eventually, open_control_plane, open_operator

from .rayjob_env import FAST_DASHBOARD, small_rayjob
from .rayservice_env import small_rayservice

pytestmark = pytest.mark.timeout(90)


def _job_status(plane: PlaneUnderTest, ns: str) -> str:
    job = plane.stored(RAY_JOBS, ns, "job") or {}
    return str((job.get("status") or {}).get("jobStatus") or "")


def _service_ready(plane: PlaneUnderTest, ns: str) -> bool:
    service = plane.stored(RAY_SERVICES, ns, "svc") or {}
    conditions = (service.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


async def _run_job_and_service(plane: PlaneUnderTest, ns: str) -> None:
    await plane.namespace(ns)
    await plane.create(RAY_JOBS, small_rayjob("job", submissionMode="HTTPMode"), ns)
    await plane.create(RAY_SERVICES, small_rayservice("svc"), ns)
    await eventually(lambda: _job_status(plane, ns) == "SUCCEEDED", timeout=40, what="job done")
    await eventually(lambda: _service_ready(plane, ns), timeout=40, what="service Ready")


async def test_direct_by_default_makes_no_proxy_request() -> None:
    async with (
        open_control_plane(dashboard=FAST_DASHBOARD) as plane,
        open_operator(plane, controllers=ALL_KINDS),
    ):
        await _run_job_and_service(plane, "direct")
        assert plane.cp.audit.count(subresource="proxy") == 0
        assert plane.cp.audit.count(resource="services", subresource="proxy") == 0
        assert [s.namespace for s in plane.cp.dashboards.submissions] == ["direct"]


async def test_use_kubernetes_proxy_sends_dashboard_traffic_through_the_api_server() -> None:
    async with (
        open_control_plane(dashboard=FAST_DASHBOARD) as plane,
        open_operator(plane, controllers=ALL_KINDS, use_kubernetes_proxy=True),
    ):
        await _run_job_and_service(plane, "proxied")
        assert plane.cp.audit.count(resource="services", subresource="proxy") > 0


def test_service_dns_maps_only_service_names() -> None:
    calls: list[tuple[str, str, str]] = []

    def resolve(namespace: str, service: str, port: str) -> str | None:
        calls.append((namespace, service, port))
        return "http://127.0.0.1:1/h/uid/dashboard" if service == "known" else None

    dns = ServiceDns(resolve)
    assert dns("http://known.ns.svc.cluster.local:8265") == "http://127.0.0.1:1/h/uid/dashboard"
    assert dns("http://known.ns.svc:8000/prefix") == "http://127.0.0.1:1/h/uid/dashboard/prefix"
    assert dns("http://other.ns.svc.cluster.local:8265") is None
    assert dns("http://example.com:8265") is None
    assert calls == [("ns", "known", "8265"), ("ns", "known", "8000"), ("ns", "other", "8265")]
    assert split_service_url("http://a.b.svc.x.y:1") == ("b", "a", "1")
