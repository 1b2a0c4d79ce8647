"""Every KubeRay v1.7 RayCluster sample converges on rayop (one control plane for all of them).

The samples that use a feature behind an alpha feature gate (``GATED_SAMPLES``) are refused
under the default gates, as KubeRay refuses them (Warning event ``InvalidRayClusterSpec``, a
status reason, no pods). With their gates on, the NetworkPolicy and history-server samples
converge; the mTLS sample, on a plane without cert-manager, is refused as KubeRay refuses it
there (``tlsOptions requires cert-manager``); with cert-manager it converges
(``tests/e2e/test_mtls.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.network_policy import NETWORK_POLICIES
from rayop.kube.resources import PERSISTENT_VOLUME_CLAIMS, ROLES, SERVICE_ACCOUNTS, SERVICES
from rayop.testing import FAST_KUBELET, eventually
from tests.kuberay_compat import needs_material, sample_names, samples_dir

from .raycluster_env import (
    GATED_SAMPLES,
    SAMPLE_GATES,
    OperatorEnv,
    load_sample,
    running_operator,
    sample_files,
)
from .sample_nodes import sample_claims, sample_node_pools

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow, needs_material]

SAMPLE_FILES = sample_names(sample_files)
UNGATED_FILES = [f for f in SAMPLE_FILES if f not in GATED_SAMPLES]


def namespace_for(file_name: str) -> str:
    """Each sample gets its own namespace (several samples reuse one cluster name)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", file_name.removesuffix(".yaml").lower())
    return stem.strip("-")[:63].rstrip("-")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def samples_env() -> AsyncIterator[OperatorEnv]:
    """One operator with every sample applied up front, so they converge side by side."""
    samples = samples_dir()
    pools = sample_node_pools(samples / f for f in SAMPLE_FILES)  # TPU and GPU nodes
    kubelet = dataclasses.replace(FAST_KUBELET, node_pools=pools)
    async with running_operator(concurrency=4, kubelet=kubelet) as env:
        for file_name in SAMPLE_FILES:
            for claim in sample_claims(samples / file_name):  # as kubectl apply -f would
                await env.plane.create(PERSISTENT_VOLUME_CLAIMS, claim, namespace_for(file_name))
            for raycluster in load_sample(file_name):
                await env.apply(raycluster, namespace_for(file_name))
        yield env


async def test_samples_are_found() -> None:
    assert len(SAMPLE_FILES) >= 35
    assert set(GATED_SAMPLES) <= set(SAMPLE_FILES)


async def assert_converged(env: OperatorEnv, file_name: str, ns: str) -> None:
    """Waits until every RayCluster of a sample is ready, then checks what was made for it."""
    for raycluster in load_sample(file_name):
        name = raycluster["metadata"]["name"]
        await eventually(
            functools.partial(env.converged, ns, name), timeout=60, what=f"{file_name} ready"
        )
        services = {s["metadata"]["name"] for s in env.objects(SERVICES, ns)}
        head_service = (
            (raycluster["spec"]["headGroupSpec"].get("headService") or {})
            .get("metadata", {})
            .get("name")
        )
        assert (head_service or f"{name}-head-svc") in services
        groups = raycluster["spec"].get("workerGroupSpecs") or []
        if any((g.get("numOfHosts") or 1) > 1 for g in groups):
            assert f"{name}-headless" in services
        annotations = raycluster["metadata"].get("annotations") or {}
        if annotations.get("ray.io/enable-serve-service") == "true":
            assert f"{name}-serve-svc" in services
        rc = env.raycluster(ns, name)
        assert rc is not None
        if raycluster["spec"].get("gcsFaultToleranceOptions"):
            assert "ray.io/gcs-ft-redis-cleanup-finalizer" in rc["metadata"].get("finalizers", [])
        if raycluster["spec"].get("enableInTreeAutoscaling"):
            assert any(sa["metadata"]["name"] for sa in env.objects(SERVICE_ACCOUNTS, ns))
            assert env.objects(ROLES, ns)


@pytest.mark.parametrize("file_name", UNGATED_FILES)
async def test_sample_converges(samples_env: OperatorEnv, file_name: str) -> None:
    await assert_converged(samples_env, file_name, namespace_for(file_name))


async def assert_refused(env: OperatorEnv, file_name: str, *saying: str) -> None:
    """Waits for the Warning event refusing each RayCluster of a sample with a note containing
    every string of ``saying``, then checks the status reason does too and nothing was made."""
    ns = namespace_for(file_name)
    for raycluster in load_sample(file_name):
        name = raycluster["metadata"]["name"]

        def refused(name: str = name) -> bool:
            return any(
                e["regarding"].get("name") == name
                and e["type"] == "Warning"
                and all(text in e["note"] for text in saying)
                for e in env.events(ns, "InvalidRayClusterSpec")
            )

        await eventually(refused, what=f"{file_name}: InvalidRayClusterSpec saying {saying!r}")
        reason = ((env.raycluster(ns, name) or {}).get("status") or {}).get("reason", "")
        assert reason.startswith("InvalidRayClusterSpec: ")
        assert all(text in reason for text in saying), reason
        assert env.pods(ns, name, live_only=False) == []
    assert env.objects(SERVICES, ns) == []


@pytest.mark.parametrize("file_name", sorted(GATED_SAMPLES))
async def test_gated_sample_is_refused_under_default_gates(
    samples_env: OperatorEnv, file_name: str
) -> None:
    gate = GATED_SAMPLES[file_name]
    await assert_refused(samples_env, file_name, gate, "feature gate")  # KubeRay's message


HONOURED_GATED = sorted(f for f in GATED_SAMPLES if f != "ray-cluster.mtls.yaml")
"""The gated samples that run with their gates on and no cert-manager (NetworkPolicy, history
server)."""


async def test_gated_samples_with_their_gates_on() -> None:
    """mTLS is refused without cert-manager; the NetworkPolicy and history-server samples
    converge with KubeRay's objects: the head and group policies, the collector sidecars."""
    options = OperatorOptions(feature_gates=SAMPLE_GATES)
    async with running_operator(concurrency=4, options=options) as env:
        for file_name in sorted(GATED_SAMPLES):
            for raycluster in load_sample(file_name):
                await env.apply(raycluster, namespace_for(file_name))
        await assert_refused(
            env, "ray-cluster.mtls.yaml", "tlsOptions requires cert-manager", "not installed"
        )
        for file_name in HONOURED_GATED:
            await assert_converged(env, file_name, namespace_for(file_name))
        ns = namespace_for("ray-cluster.network-policy-deny-all.yaml")
        policies = {p["metadata"]["name"] for p in env.objects(NETWORK_POLICIES, ns)}
        assert policies == {"raycluster-deny-all-head", "raycluster-deny-all-workers-workergroup"}
        ns = namespace_for("ray-cluster.historyserver.yaml")
        for pod in env.pods(ns, "raycluster-historyserver"):
            names = [c["name"] for c in pod["spec"]["containers"]]
            assert names[-1] == "ray-history-collector", names
