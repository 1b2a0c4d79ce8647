"""Endpoints and EndpointSlices follow the ready pods a Service selects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.sim.controller_manager.endpoints import SERVICE_NAME_LABEL, EndpointsController
from rayop.sim.controller_manager.garbage_collector import GarbageCollector
from rayop.sim.nodes.kubelet import Kubelet, KubeletConfig
from rayop.sim.storage.store import Store

from .sim_waiting import info, is_ready, wait_for


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    store = Store(seed=9)
    parts = [
        Kubelet(store, KubeletConfig(running_delay=0.0, ready_delay=0.01, delete_delay=0.01)),
        EndpointsController(store),
        GarbageCollector(store),
    ]
    for part in parts:
        await part.start()
    yield store
    for part in parts:
        await part.stop()


def _pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "ray-head",
                    "image": "ray",
                    "ports": [{"name": "dashboard", "containerPort": 8265}],
                }
            ]
        },
    }


def _ips(endpoints: dict[str, Any] | None, key: str = "addresses") -> list[str]:
    return sorted(a["ip"] for s in (endpoints or {}).get("subsets") or [] for a in s.get(key) or [])


def _slice(store: Store, service: str) -> dict[str, Any] | None:
    slices = info(store, "discovery.k8s.io", "endpointslices")
    items, _ = store.list(slices, "default", label_selector=f"{SERVICE_NAME_LABEL}={service}")
    assert len(items) <= 1
    return items[0] if items else None


async def test_endpoints_list_ready_pods_with_resolved_ports(store: Store) -> None:
    pods, services, endpoints = (
        info(store, "", "pods"),
        info(store, "", "services"),
        info(store, "", "endpoints"),
    )
    await store.create(
        services,
        "default",
        {
            "metadata": {"name": "head-svc", "labels": {"app": "ray"}},
            "spec": {
                "selector": {"role": "head"},
                "clusterIP": "None",
                "ports": [{"name": "dashboard", "port": 8265, "targetPort": "dashboard"}],
            },
        },
    )
    await store.create(pods, "default", _pod("head", {"role": "head"}))
    await store.create(pods, "default", _pod("other", {"role": "worker"}))
    head = await wait_for(store, pods, "default", "head", is_ready)
    assert head is not None
    ip = head["status"]["podIP"]
    ep = await wait_for(store, endpoints, "default", "head-svc", lambda e: _ips(e) == [ip])
    assert ep is not None
    (subset,) = ep["subsets"]
    assert subset["ports"] == [{"name": "dashboard", "port": 8265, "protocol": "TCP"}]
    assert subset["addresses"][0]["targetRef"]["name"] == "head"
    assert subset["addresses"][0]["nodeName"] == head["spec"]["nodeName"]
    es = _slice(store, "head-svc")
    assert es is not None and es["addressType"] == "IPv4"
    (entry,) = es["endpoints"]
    assert entry["addresses"] == [ip] and entry["conditions"]["ready"] is True
    assert es["ports"] == [{"name": "dashboard", "port": 8265, "protocol": "TCP"}]
    assert es["metadata"]["ownerReferences"][0]["kind"] == "Service"


async def test_endpoints_follow_pod_readiness_and_deletion(store: Store) -> None:
    pods, services, endpoints = (
        info(store, "", "pods"),
        info(store, "", "services"),
        info(store, "", "endpoints"),
    )
    await store.create(pods, "default", _pod("w1", {"app": "w"}))
    await store.create(
        services,
        "default",
        {"metadata": {"name": "w"}, "spec": {"selector": {"app": "w"}, "ports": [{"port": 80}]}},
    )
    w1 = await wait_for(store, pods, "default", "w1", is_ready)
    assert w1 is not None
    await wait_for(store, endpoints, "default", "w", lambda e: _ips(e) == [w1["status"]["podIP"]])

    pod = await store.get(pods, "default", "w1")
    pod["status"]["conditions"] = [
        dict(c, status="False") if c["type"] == "Ready" else c for c in pod["status"]["conditions"]
    ]
    await store.update(pods, "default", "w1", pod, subresource="status")
    ep = await wait_for(store, endpoints, "default", "w", lambda e: _ips(e) == [])
    assert _ips(ep, "notReadyAddresses") == [w1["status"]["podIP"]]

    await store.delete(pods, "default", "w1")
    await wait_for(
        store, endpoints, "default", "w", lambda e: not _ips(e) and not _ips(e, "notReadyAddresses")
    )
    await wait_for(store, pods, "default", "w1", lambda p: p is None)
    es = _slice(store, "w")
    assert es is not None and es["endpoints"] == []


async def test_service_deletion_removes_endpoints_and_slices(store: Store) -> None:
    services, endpoints = info(store, "", "services"), info(store, "", "endpoints")
    await store.create(
        services,
        "default",
        {"metadata": {"name": "gone"}, "spec": {"selector": {"app": "g"}, "ports": [{"port": 80}]}},
    )
    await wait_for(store, endpoints, "default", "gone", lambda e: e is not None)
    es = _slice(store, "gone")
    assert es is not None
    await store.delete(services, "default", "gone")
    await wait_for(store, endpoints, "default", "gone", lambda e: e is None)
    slices = info(store, "discovery.k8s.io", "endpointslices")
    await wait_for(store, slices, "default", es["metadata"]["name"], lambda e: e is None)


async def test_services_without_selector_get_no_endpoints(store: Store) -> None:
    services, endpoints = info(store, "", "services"), info(store, "", "endpoints")
    await store.create(
        services, "default", {"metadata": {"name": "manual"}, "spec": {"ports": [{"port": 80}]}}
    )
    await store.create(
        services,
        "default",
        {"metadata": {"name": "marker"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}},
    )
    await wait_for(store, endpoints, "default", "marker", lambda e: e is not None)
    assert store.peek(endpoints, "default", "manual") is None
