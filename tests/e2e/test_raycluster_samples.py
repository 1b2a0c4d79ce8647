"""Every KubeRay v1.7 RayCluster sample converges on rayop (one control plane for all of them)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from raycluster_env import OperatorEnv, eventually, load_sample, running_operator, sample_files

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

SAMPLE_FILES = sample_files()


def namespace_for(file_name: str) -> str:
    """Each sample gets its own namespace (several samples reuse one cluster name)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", file_name.removesuffix(".yaml").lower())
    return stem.strip("-")[:63].rstrip("-")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def samples_env() -> AsyncIterator[OperatorEnv]:
    """One operator with every sample applied up front, so they converge side by side."""
    async with running_operator(concurrency=4) as env:
        for file_name in SAMPLE_FILES:
            for raycluster in load_sample(file_name):
                await env.apply(raycluster, namespace_for(file_name))
        yield env


async def test_samples_are_found() -> None:
    assert len(SAMPLE_FILES) >= 35


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_sample_converges(samples_env: OperatorEnv, file_name: str) -> None:
    env = samples_env
    ns = namespace_for(file_name)
    for raycluster in load_sample(file_name):
        name = raycluster["metadata"]["name"]
        await eventually(
            lambda name=name: env.converged(ns, name), timeout=60, what=f"{file_name} ready"
        )
        services = {s["metadata"]["name"] for s in env.objects("services", ns)}
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
            assert any(sa["metadata"]["name"] for sa in env.objects("serviceaccounts", ns))
            assert env.objects("roles", ns, group="rbac.authorization.k8s.io")
