"""The client against the embedded control plane: the real wire protocol, end to end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from rayop.kube import errors
from rayop.kube.client import KubeClient, WatchEvent
from rayop.kube.config import load_config
from rayop.kube.metrics import RestClientMetrics
from rayop.kube.resources import CONFIGMAPS, PODS
from rayop.sim.controlplane import EmbeddedControlPlane

NS = "default"


@pytest.fixture
async def cp() -> AsyncIterator[EmbeddedControlPlane]:
    async with EmbeddedControlPlane() as plane:
        yield plane


@pytest.fixture
async def kube(cp: EmbeddedControlPlane) -> AsyncIterator[KubeClient]:
    config = await load_config(kubeconfig=cp.kubeconfig_path)
    async with KubeClient(config, qps=-1) as client:
        yield client


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


async def test_create_get_list_and_already_exists(kube: KubeClient) -> None:
    created = await kube.create(CONFIGMAPS, configmap("a", app="x"), namespace=NS)
    assert created["metadata"]["uid"]
    assert (await kube.get(CONFIGMAPS, "a", namespace=NS))["data"] == {"k": "v"}
    with pytest.raises(errors.AlreadyExists):
        await kube.create(CONFIGMAPS, configmap("a"), namespace=NS)
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIGMAPS, "missing", namespace=NS)
    for i in range(7):
        await kube.create(CONFIGMAPS, configmap(f"page-{i}", app="y"), namespace=NS)
    listed = await kube.list(CONFIGMAPS, namespace=NS, label_selector="app=y", limit=3)
    assert sorted(o["metadata"]["name"] for o in listed["items"]) == [f"page-{i}" for i in range(7)]
    assert listed["metadata"]["resourceVersion"]


async def test_update_with_stale_resource_version_is_a_conflict(kube: KubeClient) -> None:
    first = await kube.create(CONFIGMAPS, configmap("c"), namespace=NS)
    first["data"] = {"k": "v2"}
    updated = await kube.update(CONFIGMAPS, first)
    assert updated["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    first["data"] = {"k": "v3"}
    with pytest.raises(errors.Conflict) as info:
        await kube.update(CONFIGMAPS, first)  # still the old resourceVersion
    assert info.value.code == 409


async def test_status_update_and_patch_types_on_pods(kube: KubeClient) -> None:
    pod = {
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    await kube.create(PODS, pod, namespace=NS)
    # The simulated kubelet writes the pod too, so re-read and retry on Conflict, as a
    # controller does.
    for _ in range(20):
        latest = await kube.get(PODS, "p", namespace=NS)
        latest["status"] = {**latest.get("status", {}), "message": "hello"}
        try:
            written = await kube.update_status(PODS, latest)
            break
        except errors.Conflict:
            continue
    else:
        pytest.fail("update_status kept conflicting")
    assert written["status"]["message"] == "hello"
    merged = await kube.patch(PODS, "p", {"metadata": {"labels": {"b": "2"}}}, namespace=NS)
    assert merged["metadata"]["labels"] == {"a": "1", "b": "2"}
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}]
    patched = await kube.patch(PODS, "p", ops, namespace=NS, patch_type="json")
    assert patched["metadata"]["annotations"] == {"x": "y"}
    strategic = {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}
    patched = await kube.patch(PODS, "p", strategic, namespace=NS, patch_type="strategic")
    assert [c["image"] for c in patched["spec"]["containers"]] == ["busybox:2"]


async def test_watch_sees_changes_after_the_list(kube: KubeClient) -> None:
    await kube.create(CONFIGMAPS, configmap("w0", app="w"), namespace=NS)
    listed = await kube.list(CONFIGMAPS, namespace=NS, label_selector="app=w")
    rv = listed["metadata"]["resourceVersion"]
    got: list[WatchEvent] = []
    async with kube.watch(
        CONFIGMAPS, namespace=NS, label_selector="app=w", resource_version=rv
    ) as events:

        async def writer() -> None:
            await kube.create(CONFIGMAPS, configmap("w1", app="w"), namespace=NS)
            await kube.patch(CONFIGMAPS, "w1", {"data": {"k": "changed"}}, namespace=NS)
            await kube.delete(CONFIGMAPS, "w1", namespace=NS)

        task = asyncio.create_task(writer())
        async for ev in events:
            if ev.type != "BOOKMARK":
                got.append(ev)
            if len(got) == 3:
                break
        await task
    assert [(e.type, e.object["metadata"]["name"]) for e in got] == [
        ("ADDED", "w1"),
        ("MODIFIED", "w1"),
        ("DELETED", "w1"),
    ]


async def test_watch_from_a_compacted_resource_version_is_gone() -> None:
    async with EmbeddedControlPlane(history_size=5) as plane:
        config = await load_config(kubeconfig=plane.kubeconfig_path)
        async with KubeClient(config, qps=-1) as kube:
            first = await kube.create(CONFIGMAPS, configmap("old"), namespace=NS)
            for i in range(20):
                await kube.create(CONFIGMAPS, configmap(f"new-{i}"), namespace=NS)
            old_rv = first["metadata"]["resourceVersion"]
            with pytest.raises(errors.Gone) as info:
                async with kube.watch(CONFIGMAPS, namespace=NS, resource_version=old_rv) as events:
                    async for _ in events:
                        pass
    assert info.value.code == 410
    assert info.value.reason in ("Expired", "Gone")


async def test_https_control_plane_through_its_kubeconfig() -> None:
    async with EmbeddedControlPlane(tls=True) as plane:
        config = await load_config(kubeconfig=plane.kubeconfig_path)
        assert config.server.startswith("https://")
        assert config.ssl_context is not None
        async with KubeClient(config, qps=-1) as kube:
            await kube.create(CONFIGMAPS, configmap("tls"), namespace=NS)
            assert (await kube.get(CONFIGMAPS, "tls", namespace=NS))["data"] == {"k": "v"}


async def test_delete_with_preconditions_and_delete_collection(kube: KubeClient) -> None:
    created = await kube.create(CONFIGMAPS, configmap("d"), namespace=NS)
    with pytest.raises(errors.Conflict):
        await kube.delete(CONFIGMAPS, "d", namespace=NS, preconditions={"uid": "not-the-uid"})
    await kube.delete(
        CONFIGMAPS,
        "d",
        namespace=NS,
        propagation_policy="Background",
        preconditions={"uid": created["metadata"]["uid"]},
    )
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIGMAPS, "d", namespace=NS)
    for i in range(3):
        await kube.create(CONFIGMAPS, configmap(f"gone-{i}", batch="b"), namespace=NS)
    await kube.create(CONFIGMAPS, configmap("kept", batch="other"), namespace=NS)
    await kube.delete_collection(CONFIGMAPS, namespace=NS, label_selector="batch=b")
    left = await kube.list(CONFIGMAPS, namespace=NS, label_selector="batch")
    assert [o["metadata"]["name"] for o in left["items"]] == ["kept"]


async def test_injected_429s_are_retried_and_counted(cp: EmbeddedControlPlane) -> None:
    registry = CollectorRegistry()
    config = await load_config(kubeconfig=cp.kubeconfig_path)
    async with KubeClient(config, qps=-1, metrics=RestClientMetrics(registry)) as kube:
        await kube.create(CONFIGMAPS, configmap("r"), namespace=NS)
        cp.faults.error_429_rate = 1.0
        cp.faults.retry_after_seconds = 0
        with pytest.raises(errors.TooManyRequests):
            await kube.get(CONFIGMAPS, "r", namespace=NS)
        cp.faults.error_429_rate = 0.0
        assert (await kube.get(CONFIGMAPS, "r", namespace=NS))["metadata"]["name"] == "r"
    labels = {"code": "429", "method": "GET", "host": config.host}
    assert registry.get_sample_value("rest_client_requests_total", labels) == 11


async def test_wrong_token_is_unauthorized(cp: EmbeddedControlPlane) -> None:
    from rayop.kube.config import KubeConfig

    async with KubeClient(KubeConfig.for_server(cp.url, token="wrong"), qps=-1) as kube:
        with pytest.raises(errors.Unauthorized):
            await kube.get(CONFIGMAPS, "x", namespace=NS)


async def test_every_request_is_told_to_the_request_hook_and_only_writes_to_the_write_hook(
    kube: KubeClient,
) -> None:
    requests: list[tuple[str, str]] = []
    writes: list[str] = []
    kube.on_request = lambda method, path: requests.append((method, path))
    kube.on_write = lambda method, path, answer, error: writes.append(method)
    await kube.create(CONFIGMAPS, configmap("hooked"), namespace=NS)
    await kube.get(CONFIGMAPS, "hooked", namespace=NS)
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIGMAPS, "absent", namespace=NS)
    path = f"/api/v1/namespaces/{NS}/configmaps"
    assert requests == [("POST", path), ("GET", f"{path}/hooked"), ("GET", f"{path}/absent")]
    assert writes == ["POST"]
