"""rayop's RayCluster controller on a real kube-apiserver, with kwok running the pods.

The same behaviours as tests/e2e, observed only through the API: KubeRay samples converge
(the real scheduler binds the pods, kwok makes them Running and Ready), replicas scale both
ways, and deleting a RayCluster lets the real garbage collector remove what it owned. The
NetworkPolicy and history-server samples converge with their gates on; the mTLS sample is
refused with its gate on when cert-manager is not served, as KubeRay refuses it (with
cert-manager: tests/real/test_differential_mtls.py).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.kube.resources import PODS, RAY_CLUSTERS, SERVICES
from rayop.testing import eventually
from tests.kuberay_compat import needs_material, sample_names

from .real_support import (
    GATED_SAMPLES,
    apply_raycluster,
    cluster_pods,
    converged,
    create_namespace,
    eligible_samples,
    load_sample,
    rayop_operator,
    status_reason,
    unique_namespace,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(180, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
    needs_material,
]

REFUSED_SAMPLES = ["ray-cluster.mtls.yaml"]
"""Gated samples refused with their gate on here (mTLS: cert-manager is not served)."""
SAMPLE_FILES = [f for f in sample_names(eligible_samples) if f not in REFUSED_SAMPLES]
SAMPLE_OPTIONS = OperatorOptions(
    feature_gates=FeatureGates().with_overrides(dict.fromkeys(GATED_SAMPLES.values(), True))
)
"""The alpha gates of the gated samples (off by default, as in KubeRay) turned on."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def operator(real_kubeconfig: str) -> AsyncIterator[KubeClient]:
    """rayop's RayCluster controller on the real control plane; yields a user client."""
    async with (
        user_client(real_kubeconfig) as client,
        rayop_operator(real_kubeconfig, concurrency=4, options=SAMPLE_OPTIONS),
    ):
        yield client


async def test_enough_samples_run_on_plain_nodes() -> None:
    assert len(SAMPLE_FILES) >= 20, SAMPLE_FILES


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_sample_converges(operator: KubeClient, file_name: str) -> None:
    client = operator
    ns = await create_namespace(client, unique_namespace("sample"))
    for raycluster in load_sample(file_name):
        await apply_raycluster(client, raycluster, ns)
    for raycluster in load_sample(file_name):
        name = raycluster["metadata"]["name"]
        await eventually(
            functools.partial(converged, client, ns, name), timeout=120, what=f"{file_name} ready"
        )
        services = {
            s["metadata"]["name"] for s in (await client.list(SERVICES, namespace=ns))["items"]
        }
        head_service = (
            (raycluster["spec"]["headGroupSpec"].get("headService") or {})
            .get("metadata", {})
            .get("name")
        )
        assert (head_service or f"{name}-head-svc") in services
        for pod in await cluster_pods(client, ns, name):
            assert pod["spec"]["nodeName"].startswith("kwok-node-")
            assert pod["status"]["podIP"]


@pytest.mark.parametrize("file_name", REFUSED_SAMPLES)
async def test_gated_sample_is_refused_with_its_gate_on(
    operator: KubeClient, file_name: str
) -> None:
    client = operator
    ns = await create_namespace(client, unique_namespace("gated"))
    gate = GATED_SAMPLES[file_name]
    for raycluster in load_sample(file_name):
        await apply_raycluster(client, raycluster, ns)
    for raycluster in load_sample(file_name):
        name = raycluster["metadata"]["name"]

        async def refused(name: str = name) -> bool:
            return (await status_reason(client, ns, name)).startswith("InvalidRayClusterSpec: ")

        await eventually(refused, what=f"{file_name} refused", timeout=60)
        reason = await status_reason(client, ns, name)
        assert "tlsOptions requires cert-manager, but cert-manager is not installed" in reason
        assert gate == "RayClusterMTLS", gate
        assert await cluster_pods(client, ns, name) == []
        assert (await client.list(SERVICES, namespace=ns))["items"] == []


def _replicas(n: int) -> dict[str, Any]:
    return {"spec": {"workerGroupSpecs": [{"groupName": "workers", "replicas": n}]}}


async def test_scale_then_delete_collects_everything(operator: KubeClient) -> None:
    client = operator
    ns = await create_namespace(client, unique_namespace("lifecycle"))
    (sample,) = load_sample("ray-cluster.sample.yaml")
    sample["metadata"]["name"] = "scaled"
    sample["spec"]["workerGroupSpecs"][0].update(groupName="workers", replicas=1, maxReplicas=10)
    await apply_raycluster(client, sample, ns)
    await eventually(lambda: converged(client, ns, "scaled"), what="1 worker", timeout=60)

    async def workers() -> int:
        pods = await cluster_pods(client, ns, "scaled")
        return sum(p["metadata"]["labels"]["ray.io/node-type"] == "worker" for p in pods)

    for n in (4, 2):
        rc = await client.get(RAY_CLUSTERS, "scaled", namespace=ns)
        rc["spec"]["workerGroupSpecs"][0]["replicas"] = n
        await client.update(RAY_CLUSTERS, rc)

        async def scaled(n: int = n) -> bool:
            return await workers() == n and await converged(client, ns, "scaled")

        await eventually(scaled, what=f"{n} workers", timeout=60)

    await client.delete(RAY_CLUSTERS, "scaled", namespace=ns)

    async def all_gone() -> bool:
        try:
            await client.get(RAY_CLUSTERS, "scaled", namespace=ns)
            return False
        except NotFound:
            pass
        pods = (await client.list(PODS, namespace=ns))["items"]
        services = (await client.list(SERVICES, namespace=ns))["items"]
        return not pods and not services

    await eventually(all_gone, what="pods and services garbage-collected", timeout=60)
