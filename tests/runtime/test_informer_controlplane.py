"""Informers against the embedded control plane: drops, 410s, scale, and client throttling."""

from __future__ import annotations

import copy
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.metrics import RestClientMetrics
from rayop.kube.resources import CONFIGMAPS, PODS
from rayop.runtime.informers.shared_informer import SharedInformer
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import eventually

from .kuberay_pods import kuberay_worker_pod

QUIET_KUBELET = KubeletConfig(pending_delay=3600.0)


def client_for(cp: EmbeddedControlPlane, **kwargs: Any) -> KubeClient:
    return KubeClient(KubeConfig.for_server(cp.url, token=cp.token), **kwargs)


def configmap(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


def orphan(pod: dict[str, Any]) -> dict[str, Any]:
    """Drops the owner reference: there is no RayCluster, and the GC would delete the pod."""
    del pod["metadata"]["ownerReferences"]
    return pod


def snapshot(objs: Any) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in objs}


@pytest.fixture
async def cp() -> AsyncIterator[EmbeddedControlPlane]:
    async with EmbeddedControlPlane(kubelet=QUIET_KUBELET, history_size=20) as plane:
        yield plane


async def test_cache_converges_under_dropped_watches_and_expired_history(cp: EmbeddedControlPlane) -> None:
    info = cp.store.resources.get("", "v1", "configmaps")
    assert info is not None
    async with client_for(cp, qps=-1) as client:
        informer = SharedInformer(client, CONFIGMAPS, namespace="default")
        informer.start()
        try:
            assert await informer.wait_for_sync(10)
            # Slow watch delivery, short-lived streams and a 20-event history: by the time a
            # dropped watch resumes, the burst below has pushed its resourceVersion out (410).
            cp.faults.watch_delay = 0.02
            cp.faults.watch_drop_after_events = 3
            for i in range(60):
                await cp.store.create(info, "default", configmap(f"cm-{i}", "0"))
            for i in range(0, 60, 3):
                obj = copy.deepcopy(await cp.store.get(info, "default", f"cm-{i}"))
                obj["data"]["v"] = "1"
                await cp.store.update(info, "default", f"cm-{i}", obj)
            for i in range(1, 60, 5):
                await cp.store.delete(info, "default", f"cm-{i}")
            expected = snapshot(cp.store.iter_objects(info, "default"))
            await eventually(lambda: snapshot(informer.list("default")) == expected)
            assert informer.reflector.lists >= 2  # at least one relist after 410 Gone
            assert informer.reflector.watches >= 2  # the dropped watch was resumed (and expired)
            assert cp.audit.count(verb="list", resource="configmaps") == informer.reflector.lists
        finally:
            await informer.stop()


async def test_list_and_watch_of_ten_thousand_pods() -> None:
    async with EmbeddedControlPlane(kubelet=QUIET_KUBELET) as cp:
        info = cp.store.resources.get("", "v1", "pods")
        assert info is not None
        for i in range(10_000):
            await cp.store.create(info, "default", orphan(kuberay_worker_pod(f"c{i // 100}", i)), copy=False)
        async with client_for(cp, qps=-1) as client:
            informer = SharedInformer(client, PODS, label_selector="ray.io/node-type in (head,worker,redis-cleanup)")
            started = time.perf_counter()
            informer.start()
            try:
                assert await informer.wait_for_sync(60)
                synced_in = time.perf_counter() - started
                assert len(informer) == 10_000
                print(f"synced 10,000 pods in {synced_in:.2f} s")
                await cp.store.delete(info, "default", kuberay_worker_pod("c0", 0)["metadata"]["name"])
                await cp.store.create(info, "default", orphan(kuberay_worker_pod("c100", 10_000)))
                await eventually(lambda: len(informer) == 10_000 and informer.get("default", "raycluster-c100-workergroup-worker-10000") is not None)
                by_owner = informer.list("default", label_selector={"ray.io/cluster": "raycluster-c7"})
                assert len(by_owner) == 100
            finally:
                await informer.stop()


async def test_client_throttling_shows_in_the_rate_limiter_metric(cp: EmbeddedControlPlane) -> None:
    def waited(registry: CollectorRegistry) -> float:
        return registry.get_sample_value(
            "rest_client_rate_limiter_duration_seconds_sum", {"verb": "GET", "host": cp.url.split("//")[1]}
        ) or 0.0

    slow_registry, open_registry = CollectorRegistry(), CollectorRegistry()
    async with client_for(cp, qps=10, burst=1, metrics=RestClientMetrics(slow_registry)) as slow, \
            client_for(cp, qps=1000, burst=1000, metrics=RestClientMetrics(open_registry)) as fast:
        for client in (slow, fast):
            informers = [SharedInformer(client, CONFIGMAPS, namespace=f"ns-{i}") for i in range(6)]
            for informer in informers:
                informer.start()
            try:
                for informer in informers:
                    assert await informer.wait_for_sync(10)
            finally:
                for informer in informers:
                    await informer.stop()
    # Six LISTs through a 10 qps bucket of one token wait about 0.1 + 0.2 + ... + 0.5 s in all.
    assert waited(slow_registry) >= 1.0
    assert waited(open_registry) < 0.1
