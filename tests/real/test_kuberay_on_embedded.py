"""KubeRay v1.7.0 itself against `rayop apiserver`: the embedded plane as KubeRay's cluster.

`rayop apiserver` runs as a process (no rayop operator), KubeRay's own CRDs
(tests/kuberay_compat.py) are applied, and KubeRay's binary (built by scripts/controlplane-build)
runs against it with ``--use-kubernetes-proxy``, so it reaches the simulated Ray dashboards
through the embedded services proxy and checks each head's Serve proxy through the pods proxy.
controller-runtime sends protobuf for every built-in kind, so this is also the tier's real
protobuf client.

Every document of a sample is applied, except those of kinds the plane does not serve
(:data:`NOT_SERVED`: third-party schedulers' queues, a StatefulSet). Every RayCluster sample
that needs no alpha gate must reach ``ready``, ``ray-job.sample.yaml``
SUCCEEDED and ``ray-service.sample.yaml`` Ready, and no request in the server's audit may be
answered 415 or 5xx, except a proxied request's 503 when the simulated head does not listen on
that port yet (KubeRay probes a head's Serve port before Serve runs; a real kube-apiserver
answers such a probe 503 as well).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists
from rayop.kube.resource import Resource
from rayop.kube.resources import (
    CONFIGMAPS,
    CRDS,
    INGRESSES,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    RAY_CLUSTERS,
    RAY_JOBS,
    RAY_SERVICES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from tests.kuberay_compat import crds_dir, needs_material, sample_docs, sample_names

from .real_support import (
    GATED_SAMPLES,
    converged,
    eligible_samples,
    kuberay_running,
    user_client,
)

pytestmark = [pytest.mark.real, pytest.mark.asyncio(loop_scope="module"), needs_material]

KUBERAY_VERSION = "v1.7.0"
CONVERGE_TIMEOUT = 240.0
CLUSTER_SAMPLES = [f for f in sample_names(eligible_samples) if f not in GATED_SAMPLES]
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
_RBAC = "rbac.authorization.k8s.io"
_BY_KIND = {
    r.kind: r
    for r in (
        CONFIGMAPS,
        SECRETS,
        SERVICES,
        SERVICE_ACCOUNTS,
        PERSISTENT_VOLUME_CLAIMS,
        DEPLOYMENTS,
        INGRESSES,
        ROLES,
        ROLE_BINDINGS,
        Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
        Resource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
        RAY_CLUSTERS,
        RAY_JOBS,
        RAY_SERVICES,
    )
}
NOT_SERVED = {  # documents of samples whose kinds the embedded plane does not serve
    ("scheduling.run.ai/v2", "Queue"): "the KAI scheduler's queue (its CRD is not installed)",
    ("scheduling.volcano.sh/v1beta1", "Queue"): "Volcano's queue (its CRD is not installed)",
    ("apps/v1", "StatefulSet"): "the Redis of persistent-redis (StatefulSets are not served)",
}
_METRIC = re.compile(
    r'^apiserver_request_total\{code="(\d+)",resource="([^"]*)",'
    r'subresource="([^"]*)",verb="([^"]*)"\} (\d+)$'
)
Obj = dict[str, Any]


@dataclass
class Plane:
    """The running `rayop apiserver` process and its kubeconfig."""

    proc: subprocess.Popen[str]
    kubeconfig: Path
    workdir: Path


@contextlib.contextmanager
def running_plane(workdir: Path, *args: str) -> Iterator[Plane]:
    """Runs `rayop apiserver` (fast pods, plus ``args``) until the block exits, then stops it
    with SIGTERM."""
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [sys.executable, "-m", "rayop", "apiserver", "--kubeconfig-out", str(kubeconfig)]
    cmd += ["--pod-running-delay", "0.05", "--pod-ready-delay", "0.05", *args]
    with (workdir / "apiserver.log").open("a") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != str(kubeconfig):
        proc.kill()
        proc.wait()
        proc.stdout.close()
        pytest.fail("rayop apiserver did not start: " + (workdir / "apiserver.log").read_text())
    try:
        yield Plane(proc, kubeconfig, workdir)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """Runs `rayop apiserver` (fast pods) for the module."""
    with running_plane(tmp_path_factory.mktemp("kuberay-on-embedded")) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(plane: Plane) -> AsyncIterator[KubeClient]:
    """A user client of the plane, with KubeRay's CRDs applied."""
    async with user_client(str(plane.kubeconfig)) as c:
        for path in sorted(crds_dir().glob("*.yaml")):
            await c.create(CRDS, yaml.safe_load(path.read_text()))
        yield c


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kuberay(plane: Plane, client: KubeClient, kuberay_binary: Path) -> AsyncIterator[Path]:
    """Runs KubeRay against the plane for the module; yields its log's path."""
    log_path = plane.workdir / "ray-operator.log"
    async with kuberay_running(
        kuberay_binary,
        str(plane.kubeconfig),
        log_path,
        "--use-kubernetes-proxy",
        "--reconcile-concurrency=4",
    ):
        yield log_path


async def _apply_sample(client: KubeClient, file_name: str, namespace: str) -> list[Obj]:
    """Creates every document of a sample file in ``namespace``; returns them."""
    await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    docs = sample_docs(file_name)
    applied = []
    for doc in docs:
        if (doc.get("apiVersion"), doc["kind"]) in NOT_SERVED:
            continue
        res = _BY_KIND.get(doc["kind"])
        assert res is not None, f"{file_name}: no resource for kind {doc['kind']}"
        doc["metadata"].pop("namespace", None)
        try:
            await client.create(res, doc, namespace=namespace if res.namespaced else None)
        except AlreadyExists:
            if res.namespaced:
                raise
            continue  # a cluster-wide object two samples share (the ray-authenticator role)
        applied.append(doc)
    return applied


async def _wait(what: str, check: Any, timeout: float = CONVERGE_TIMEOUT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.5)


def request_counts(plane: Plane) -> list[tuple[str, re.Match[str]]]:
    """The server's ``apiserver_request_total`` lines from its /metrics, each with its match
    (groups: code, resource, subresource, verb, count)."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    token = config["users"][0]["user"]["token"]
    out = subprocess.run(
        ["curl", "-sk", "-H", f"Authorization: Bearer {token}", f"{server}/metrics"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    return [(line, m) for line in out.splitlines() if (m := _METRIC.match(line)) is not None]


def refused_requests(plane: Plane) -> list[str]:
    """The audit's request counts answered 415 or 5xx, and watches answered 4xx (client-go's
    reflectors open watch-lists, which the plane serves), read from the server's /metrics."""
    refused = []
    for line, m in request_counts(plane):
        code, subresource, verb = m.group(1), m.group(3), m.group(4)
        if code == "503" and subresource == "proxy":
            continue  # the far end refused (Serve not up yet): kube-apiserver answers 503 too
        if code == "415" or code.startswith("5") or (verb == "WATCH" and code.startswith("4")):
            refused.append(line)
    return refused


def _ns(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(2)}"


async def test_every_raycluster_sample_reaches_ready(client: KubeClient, kuberay: Path) -> None:
    pending: dict[tuple[str, str], str] = {}
    for file_name in CLUSTER_SAMPLES:
        ns = _ns("kr")
        for doc in await _apply_sample(client, file_name, ns):
            if doc["kind"] == "RayCluster":
                pending[(ns, doc["metadata"]["name"])] = file_name
    deadline = asyncio.get_running_loop().time() + CONVERGE_TIMEOUT
    while pending and asyncio.get_running_loop().time() < deadline:
        for ns, name in sorted(pending):
            if await converged(client, ns, name):
                del pending[(ns, name)]
        await asyncio.sleep(0.5)
    assert not pending, f"not ready: {sorted(set(pending.values()))}; KubeRay's log: {kuberay}"


async def test_ray_job_sample_succeeds(client: KubeClient, kuberay: Path) -> None:
    await ray_job_sample_succeeds(client)


async def ray_job_sample_succeeds(client: KubeClient) -> None:
    """Applies ``ray-job.sample.yaml`` in a new namespace; waits for SUCCEEDED and Complete."""
    ns = _ns("krjob")
    await _apply_sample(client, "ray-job.sample.yaml", ns)

    async def succeeded() -> bool:
        job = await client.get(RAY_JOBS, "rayjob-sample", namespace=ns)
        status = job.get("status") or {}
        assert status.get("jobStatus") not in ("FAILED", "STOPPED"), status
        return status.get("jobStatus") == "SUCCEEDED" and (
            status.get("jobDeploymentStatus") == "Complete"
        )

    await _wait("rayjob-sample SUCCEEDED", succeeded)


async def test_ray_service_sample_is_ready_with_the_head_serving(
    client: KubeClient, kuberay: Path
) -> None:
    await ray_service_sample_is_ready_with_the_head_serving(client)


async def ray_service_sample_is_ready_with_the_head_serving(client: KubeClient) -> None:
    """Applies ``ray-service.sample.yaml`` in a new namespace; waits for Ready and for the
    head's ``ray.io/serve=true`` label (KubeRay's Serve proxy check)."""
    ns = _ns("krsvc")
    await _apply_sample(client, "ray-service.sample.yaml", ns)

    async def ready() -> bool:
        svc = await client.get(RAY_SERVICES, "rayservice-sample", namespace=ns)
        conditions = (svc.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    await _wait("rayservice-sample Ready", ready)

    async def head_serves() -> bool:  # KubeRay's Serve health check through the pods proxy
        pods = await client.list(PODS, namespace=ns, label_selector="ray.io/node-type=head")
        return any(
            (p["metadata"].get("labels") or {}).get("ray.io/serve") == "true" for p in pods["items"]
        )

    await _wait("the head pod labelled ray.io/serve=true", head_serves, timeout=60)


async def test_no_request_was_refused(plane: Plane, kuberay: Path) -> None:
    """Runs last: every request KubeRay (and the tests) sent was understood by the plane."""
    refused = refused_requests(plane)
    assert not refused, "\n".join(refused)
