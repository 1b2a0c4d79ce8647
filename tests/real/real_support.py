"""Helpers of the real control-plane tier: CRDs, rayop's operator on a kubeconfig, and API
views of RayClusters and their pods (a real server has no store to peek into)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import secrets
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rayop.api.crds import build_crds
from rayop.cli.realcluster_http import ApiCaller, wait_until
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import NAMESPACES, PODS, RAY_CLUSTERS
from rayop.testing import RunningOperator, open_operator, raycluster_converged
from tests.kuberay_compat import sample_docs, samples_dir

Obj = dict[str, Any]

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "controlplane-build"


def build(*components: str, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Runs scripts/controlplane-build for ``components`` (blocks); returns (ok, why-not).
    ``env`` is added to the script's environment (e.g. ``RAYOP_KUBERAY_VERSION``).

    The reason quotes the script's own report of the step that failed and the error above it.
    """
    proc = subprocess.run(
        [str(BUILD_SCRIPT), *components],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    if proc.returncode == 0:
        return True, ""
    lines = proc.stderr.strip().splitlines()
    failed = [i for i, ln in enumerate(lines) if "FAILED at step" in ln]
    detail = " / ".join(lines[max(0, failed[0] - 1) : failed[0] + 1]) if failed else lines[-1:]
    return False, f"scripts/controlplane-build {' '.join(components)}: {detail}"


def install_rayop_crds(server: str, token: str) -> None:
    """Creates rayop's ray.io CRDs and blocks until all four kinds are served."""
    api = ApiCaller(server, token, timeout=120)  # a full-schema CRD is ~1 MB to store
    for crd in build_crds():
        code = api.create(CRD_PATH, crd)
        assert code in (201, 409), f"creating {crd['metadata']['name']}: HTTP {code}"
    for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs"):
        wait_until(
            lambda p=plural: api.status(f"/apis/ray.io/v1/{p}") == 200,  # type: ignore[misc]
            timeout=30,
            what=f"ray.io/v1 {plural} served",
        )


def server_and_token(kubeconfig: str) -> tuple[str, str]:
    """Returns the server URL and bearer token of a kubeconfig's current context."""
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    ctx = next(c["context"] for c in doc["contexts"] if c["name"] == doc["current-context"])
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
    return str(cluster["server"]), str(user.get("token") or "")


def load_sample(file_name: str) -> list[Obj]:
    """Returns the RayCluster documents of a KubeRay sample file."""
    return [d for d in sample_docs(file_name) if d.get("kind") == "RayCluster"]


GATED_SAMPLES: dict[str, str] = {
    "ray-cluster.historyserver.yaml": "RayClusterHistoryServer",
    "ray-cluster.mtls.yaml": "RayClusterMTLS",
    "ray-cluster.network-policy-deny-all.yaml": "RayClusterNetworkPolicy",
}
"""KubeRay samples using a feature behind an alpha gate -> that gate. With the gate on rayop runs
the NetworkPolicy and history-server ones and refuses the mTLS one (not implemented)."""

SPECIAL_NODE_KEYS = ("nodeSelector", "affinity", "schedulerName")
EXTENDED_RESOURCES = ("nvidia.com/gpu", "google.com/tpu")


def _templates(raycluster: dict[str, Any]) -> list[dict[str, Any]]:
    spec = raycluster["spec"]
    groups = [spec["headGroupSpec"], *(spec.get("workerGroupSpecs") or [])]
    return [g.get("template") or {} for g in groups]


def runs_on_plain_nodes(raycluster: dict[str, Any]) -> bool:
    """Tells whether every pod of a sample can be scheduled on a plain kwok node (no GPU/TPU,
    node selector, affinity, custom scheduler, or PersistentVolumeClaim: with no volume
    provisioner the real scheduler keeps such pods Pending)."""
    text = repr(raycluster)
    if any(r in text for r in EXTENDED_RESOURCES) or "persistentVolumeClaim" in text:
        return False
    return not any(
        (t.get("spec") or {}).get(key) for t in _templates(raycluster) for key in SPECIAL_NODE_KEYS
    )


def eligible_samples() -> list[str]:
    """KubeRay RayCluster samples whose pods all run on plain kwok nodes."""
    files = sorted(p.name for p in samples_dir().glob("ray-cluster*.yaml"))
    return [
        f for f in files if load_sample(f) and all(runs_on_plain_nodes(rc) for rc in load_sample(f))
    ]


def unique_namespace(prefix: str) -> str:
    """Returns a fresh namespace name."""
    return f"{prefix}-{secrets.token_hex(3)}"


@contextlib.asynccontextmanager
async def user_client(kubeconfig: str) -> AsyncIterator[KubeClient]:
    """A KubeClient acting as the test's user (no client-side throttling)."""
    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config, qps=-1) as client:
        yield client


@contextlib.asynccontextmanager
async def rayop_operator(
    kubeconfig: str,
    *,
    watch_namespaces: Sequence[str] | None = None,
    concurrency: int = 4,
    options: OperatorOptions | None = None,
) -> AsyncIterator[RunningOperator]:
    """Runs rayop's RayCluster controller against ``kubeconfig`` until the block exits
    (``options``: KubeRay's defaults unless given); see :func:`rayop.testing.open_operator`."""
    config = await load_config(kubeconfig=kubeconfig)
    async with open_operator(
        config,
        watch_namespaces=watch_namespaces,
        concurrency=concurrency,
        options=options,
        ready_timeout=60,
    ) as running:
        yield running


async def create_namespace(client: KubeClient, name: str) -> str:
    """Creates a namespace and returns its name."""
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    return name


async def apply_raycluster(client: KubeClient, raycluster: Obj, namespace: str) -> Obj:
    """Creates a copy of ``raycluster`` in ``namespace``."""
    obj = copy.deepcopy(raycluster)
    obj["metadata"] = {**obj["metadata"], "namespace": namespace}
    return await client.create(RAY_CLUSTERS, obj, namespace=namespace)


async def cluster_pods(client: KubeClient, namespace: str, name: str) -> list[Obj]:
    """Returns the live (not terminating) head and worker pods of a RayCluster."""
    listed = await client.list(PODS, namespace=namespace, label_selector=f"ray.io/cluster={name}")
    return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]


async def status_reason(client: KubeClient, namespace: str, name: str) -> str:
    """Returns a RayCluster's ``status.reason`` ("" when unset)."""
    rc = await client.get(RAY_CLUSTERS, name, namespace=namespace)
    return str((rc.get("status") or {}).get("reason") or "")


async def converged(client: KubeClient, namespace: str, name: str) -> bool:
    """Tells whether the RayCluster is ready as KubeRay reports it, with all pods ready."""
    rc = await client.get(RAY_CLUSTERS, name, namespace=namespace)
    return raycluster_converged(rc, await cluster_pods(client, namespace, name))


@contextlib.asynccontextmanager
async def kuberay_running(
    binary: Path,
    kubeconfig: str,
    log_path: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    metrics_addr: str = "0",
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Runs KubeRay's operator (no probe port, no leader election, metrics at ``metrics_addr``:
    none by default, plus ``args``) against ``kubeconfig`` until the block exits, its output
    appended to ``log_path``; ``env`` is added to this process's environment.

    On a normal exit of the block it checks that KubeRay did not exit early; in any case it
    stops KubeRay (SIGTERM, SIGKILL after 15 s) and blocks until it has exited.
    """
    with log_path.open("ab") as log:
        proc = await asyncio.create_subprocess_exec(
            str(binary),
            *args,
            f"--metrics-addr={metrics_addr}",
            "--health-probe-bind-address=0",
            "--enable-leader-election=false",
            env={**os.environ, **(env or {}), "KUBECONFIG": kubeconfig},
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            yield proc
            if proc.returncode is not None:
                log_text = await asyncio.to_thread(log_path.read_text)
                raise AssertionError(f"KubeRay exited early: {log_text[-3000:]}")
        finally:
            if proc.returncode is None:
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
