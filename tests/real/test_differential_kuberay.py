"""Differential test: the pods and services KubeRay v1.7.0 creates for each KubeRay RayCluster
sample, against those rayop creates, on the same real control plane.

KubeRay runs first (``--watch-namespace`` on its own namespaces) and is stopped; then rayop runs
on a second set of namespaces. Objects are normalised (``differential.py``) and compared field
by field. A difference is accepted only if it is listed in :data:`KNOWN_DIFFERENCES`, each of
which is explained in docs/known-differences.md.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.client import KubeClient
from rayop.kube.resources import CORE_EVENTS, PODS, SERVICES
from tests.kuberay_compat import needs_material, sample_names

from .differential import diff, snapshot
from .real_support import (
    apply_raycluster,
    converged,
    create_namespace,
    eligible_samples,
    kuberay_running,
    load_sample,
    rayop_operator,
    user_client,
)

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(120, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
    needs_material,
]

KUBERAY_VERSION = "v1.7.0"
CONVERGE_TIMEOUT = 150.0
SAMPLE_FILES = sample_names(eligible_samples)

KNOWN_DIFFERENCES: dict[str, str] = {
    # regex matched against each diff line -> reason (see docs/known-differences.md); none
    # today: even the head pods' ray.io/upgrade-strategy-recreate-hash is KubeRay's value
}
REFUSED_BY_KUBERAY: dict[str, str] = {
    # sample -> the alpha feature gate it needs (off by default): both operators refuse it
    "ray-cluster.historyserver.yaml": "RayClusterHistoryServer",
    "ray-cluster.mtls.yaml": "RayClusterMTLS",
    "ray-cluster.network-policy-deny-all.yaml": "RayClusterNetworkPolicy",
}


@dataclass
class Outcome:
    """What one operator produced for one sample."""

    snapshot: dict[str, Any]
    converged: bool


def _namespaces(prefix: str) -> dict[str, str]:
    token = secrets.token_hex(2)
    return {f: f"{prefix}-{token}-{i}" for i, f in enumerate(SAMPLE_FILES)}


async def _warned(client: KubeClient, namespace: str, name: str) -> bool:
    """Tells whether a Warning Event about the RayCluster ``name`` has been recorded."""
    events = (await client.list(CORE_EVENTS, namespace=namespace))["items"]
    return any(
        e.get("type") == "Warning" and (e.get("involvedObject") or {}).get("name") == name
        for e in events
    )


async def _run_samples(client: KubeClient, namespaces: dict[str, str]) -> dict[str, Outcome]:
    """Applies every sample in its namespace, waits for convergence (for a sample both
    operators refuse, for the Warning that says so: it never converges), then snapshots."""
    for file_name, ns in namespaces.items():
        for raycluster in load_sample(file_name):
            await apply_raycluster(client, raycluster, ns)
    pending = {(f, rc["metadata"]["name"]) for f in namespaces for rc in load_sample(f)}
    refusals = {(f, name) for f, name in pending if f in REFUSED_BY_KUBERAY}
    deadline = asyncio.get_running_loop().time() + CONVERGE_TIMEOUT
    while pending - refusals and asyncio.get_running_loop().time() < deadline:
        for file_name, name in sorted(pending - refusals):
            if await converged(client, namespaces[file_name], name):
                pending.discard((file_name, name))
        await asyncio.sleep(0.5)
    while refusals and asyncio.get_running_loop().time() < deadline:
        for file_name, name in sorted(refusals):
            if await _warned(client, namespaces[file_name], name):
                refusals.discard((file_name, name))
        await asyncio.sleep(0.5)
    await asyncio.sleep(2.0)  # let late writes (for example service updates) land
    outcomes = {}
    for file_name, ns in namespaces.items():
        pods = (await client.list(PODS, namespace=ns))["items"]
        services = (await client.list(SERVICES, namespace=ns))["items"]
        done = not any(f == file_name for f, _ in pending)
        outcomes[file_name] = Outcome(snapshot(pods, services), done)
    return outcomes


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def outcomes(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, tuple[Outcome, Outcome]]]:
    """Runs KubeRay, then rayop, over all samples; yields (kuberay, rayop) per sample."""
    kuberay_ns, rayop_ns = _namespaces("kuberay"), _namespaces("rayop")
    log_path = tmp_path_factory.mktemp("kuberay") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in [*kuberay_ns.values(), *rayop_ns.values()]:
            await create_namespace(client, ns)
        watch = f"--watch-namespace={','.join(kuberay_ns.values())}"
        async with kuberay_running(
            kuberay_binary, real_kubeconfig, log_path, watch, "--reconcile-concurrency=4"
        ):
            kuberay = await _run_samples(client, kuberay_ns)
        async with rayop_operator(
            real_kubeconfig, watch_namespaces=list(rayop_ns.values()), concurrency=4
        ):
            rayop = await _run_samples(client, rayop_ns)
    yield {f: (kuberay[f], rayop[f]) for f in SAMPLE_FILES}


def unexplained(lines: list[str]) -> list[str]:
    """Returns the diff lines that no entry of :data:`KNOWN_DIFFERENCES` explains."""
    return [ln for ln in lines if not any(re.search(rx, ln) for rx in KNOWN_DIFFERENCES)]


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_same_pods_and_services_as_kuberay(
    outcomes: dict[str, tuple[Outcome, Outcome]], file_name: str
) -> None:
    kuberay, rayop = outcomes[file_name]
    if file_name in REFUSED_BY_KUBERAY:  # gate off by default: both refuse, no pods
        assert not kuberay.converged and not kuberay.snapshot["pods"], file_name
        assert not rayop.converged and not rayop.snapshot["pods"], file_name
        return
    assert kuberay.converged, f"KubeRay did not converge on {file_name}"
    assert rayop.converged, f"rayop did not converge on {file_name}"
    lines = unexplained(diff(kuberay.snapshot, rayop.snapshot))
    assert not lines, f"{file_name}:\n" + "\n".join(lines)
