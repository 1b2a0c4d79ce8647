"""Zero-restart takeover, both ways, between KubeRay v1.7.0 and rayop on the real control plane.

One operator (KubeRay's binary, or rayop in-process) brings up a RayCluster, a RayJob whose job
is running, and a RayService that serves; it stops, and the other starts on the same namespace.
For :data:`WATCH_SECONDS` the API server's audit log (written by the real tier, Metadata level,
every write) must show no pod created and no pod or RayCluster deleted in that namespace; the
RayJob keeps its job id with exactly one submission in the simulated dashboard, and the
RayService keeps its active cluster and keeps serving. The dashboards are the test's pod network
(``pod_network.py``): KubeRay reaches them through the services proxy
(``--use-kubernetes-proxy``), as rayop does here.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from rayop.cli.realcluster import pod_network_socket
from rayop.cli.realcluster_config import AUDIT_LOG
from rayop.controllers.gocompat.spec_hash import raycluster_pod_hash, rayservice_cluster_hash
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import NAMESPACES, PODS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import ALL_KINDS, eventually, open_operator, raycluster_converged
from tests.kuberay_compat import samples_dir

from .pod_network import PodNetwork
from .ray_support import load_docs
from .real_support import kuberay_running, load_sample, unique_namespace, user_client

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(240, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

KUBERAY_VERSION = "v1.7.0"
WATCH_SECONDS = 60.0
SETTLE_TIMEOUT = 90.0
SERVICE_HASH = "ray.io/hash-without-replicas-and-workers-to-delete"
POD_HASH = "ray.io/upgrade-strategy-recreate-hash"
RAY_KINDS = {"RayCluster": RAY_CLUSTERS, "RayJob": RAY_JOBS, "RayService": RAY_SERVICES}
LONG_JOBS = DashboardConfig(job_run_seconds=None, serve_deploy_seconds=0.5)
"""Jobs run until the test ends, so the RayJob is Running through the takeover."""
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def audit_log(real_kubeconfig: str) -> Path:
    """The real tier's audit log (skip on an external cluster, which has none of ours)."""
    path = Path(real_kubeconfig).resolve().parent / "logs" / AUDIT_LOG
    if not path.is_file():
        pytest.skip(f"no audit log at {path} (RAYOP_REAL_KUBECONFIG cluster?)")
    return path


@contextlib.asynccontextmanager
async def kuberay_operator(
    binary: Path, kubeconfig: str, namespace: str, log_path: Path
) -> AsyncIterator[None]:
    """Runs KubeRay's operator on ``namespace`` until the block exits (then stops it)."""
    async with kuberay_running(
        binary,
        kubeconfig,
        log_path,
        f"--watch-namespace={namespace}",
        "--use-kubernetes-proxy=true",
        "--reconcile-concurrency=4",
    ):
        yield


@contextlib.asynccontextmanager
async def rayop_operator(kubeconfig: str, namespace: str) -> AsyncIterator[None]:
    """Runs rayop's three controllers on ``namespace`` until the block exits."""
    config = await load_config(kubeconfig=kubeconfig)
    async with open_operator(
        config,
        controllers=ALL_KINDS,
        watch_namespaces=[namespace],
        ready_timeout=60,
        use_kubernetes_proxy=True,
    ):
        yield


def _in(namespace: str, docs: list[Obj]) -> Obj:
    obj = copy.deepcopy(docs[0])
    obj["metadata"]["namespace"] = namespace
    return obj


async def _create_workloads(client: KubeClient, ns: str) -> dict[str, str]:
    """Creates the RayCluster, RayJob and RayService; returns their names."""
    cluster = await client.create(
        RAY_CLUSTERS, _in(ns, load_sample("ray-cluster.sample.yaml")), namespace=ns
    )
    job = await client.create(
        RAY_JOBS, _in(ns, load_docs("ray-job.sample.yaml", "RayJob")), namespace=ns
    )
    service = _in(ns, load_docs("ray-service.sample.yaml", "RayService"))
    service = await client.create(RAY_SERVICES, service, namespace=ns)
    return {
        "raycluster": cluster["metadata"]["name"],
        "rayjob": job["metadata"]["name"],
        "rayservice": service["metadata"]["name"],
    }


async def _status(client: KubeClient, resource: Any, ns: str, name: str) -> Obj:
    return dict((await client.get(resource, name, namespace=ns)).get("status") or {})


def _serving(status: Obj) -> bool:
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
    return (
        bool(active)
        and conditions.get("Ready") == "True"
        and not (status.get("pendingServiceStatus") or {}).get("rayClusterName")
    )


async def _settled(client: KubeClient, network: PodNetwork, ns: str, names: dict[str, str]) -> bool:
    """Tells whether the cluster is ready, the job running and the service serving."""
    rc = await client.get(RAY_CLUSTERS, names["raycluster"], namespace=ns)
    pods = await client.list(
        PODS, namespace=ns, label_selector=f"ray.io/cluster={names['raycluster']}"
    )
    job = await _status(client, RAY_JOBS, ns, names["rayjob"])
    service = await _status(client, RAY_SERVICES, ns, names["rayservice"])
    return (
        raycluster_converged(rc, pods["items"])
        and job.get("jobDeploymentStatus") == "Running"
        and job.get("jobStatus") == "RUNNING"
        and _serving(service)
        and len([s for s in network.submissions if s[0] == ns]) == 1
    )


async def _snapshot(client: KubeClient, ns: str, names: dict[str, str]) -> Obj:
    """What must not change across the takeover."""
    pods = (await client.list(PODS, namespace=ns))["items"]
    clusters = (await client.list(RAY_CLUSTERS, namespace=ns))["items"]
    job = await _status(client, RAY_JOBS, ns, names["rayjob"])
    service = await _status(client, RAY_SERVICES, ns, names["rayservice"])
    return {
        "pods": sorted(
            p["metadata"]["uid"] for p in pods if not p["metadata"].get("deletionTimestamp")
        ),
        "rayclusters": sorted(c["metadata"]["uid"] for c in clusters),
        "jobId": job.get("jobId"),
        "rayJobCluster": job.get("rayClusterName"),
        "activeCluster": (service.get("activeServiceStatus") or {}).get("rayClusterName"),
    }


def _audit_writes(path: Path, offset: int, ns: str) -> list[Obj]:
    """The audited write requests in ``ns`` logged after byte ``offset``."""
    with path.open("rb") as f:
        f.seek(offset)
        lines = f.read().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    return [
        e
        for e in events
        if (e.get("objectRef") or {}).get("namespace") == ns
        and e.get("stage") == "ResponseComplete"
    ]


def _summary(events: list[Obj]) -> Counter[str]:
    def key(e: Obj) -> str:
        ref = e["objectRef"]
        sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
        return f"{e['verb']} {ref.get('resource')}{sub} by {e['user']['username']}"

    return Counter(key(e) for e in events)


async def _takeover(
    kubeconfig: str,
    audit_log: Path,
    first: Callable[[str], contextlib.AbstractAsyncContextManager[None]],
    second: Callable[[str], contextlib.AbstractAsyncContextManager[None]],
) -> None:
    async with (
        user_client(kubeconfig) as client,
        PodNetwork(client, pod_network_socket(Path(kubeconfig)), config=LONG_JOBS) as network,
    ):
        ns = f"takeover-{secrets.token_hex(3)}"
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        async with first(ns):
            names = await _create_workloads(client, ns)
            await eventually(
                lambda: _settled(client, network, ns, names),
                timeout=SETTLE_TIMEOUT,
                interval=0.5,
                what="the RayCluster ready, the RayJob running, the RayService serving",
            )
            await asyncio.sleep(3.0)  # the first operator's last writes land
        compared, wrong = await _hash_mismatches(client, ns)
        assert compared == 4 and not wrong, wrong  # 3 head pods, 1 RayService cluster
        before = await _snapshot(client, ns, names)
        offset = _size(audit_log)
        async with second(ns):
            await asyncio.sleep(WATCH_SECONDS)
            after = await _snapshot(client, ns, names)
            service = await _status(client, RAY_SERVICES, ns, names["rayservice"])
            job = await _status(client, RAY_JOBS, ns, names["rayjob"])
        writes = _audit_writes(audit_log, offset, ns)
        seen = _summary(writes)
        creates = [e for e in writes if e["verb"] == "create" and _is(e, "pods")]
        deletes = [
            e for e in writes if e["verb"] == "delete" and (_is(e, "pods") or _is(e, "rayclusters"))
        ]
        assert not creates and not deletes, f"writes during the takeover: {dict(seen)}"
        assert after == before, f"{before} -> {after}; writes: {dict(seen)}"
        assert [s[2] for s in network.submissions if s[0] == ns] == [before["jobId"]]
        assert job.get("jobDeploymentStatus") == "Running", job
        assert _serving(service), service
        print(f"takeover writes in {ns}: {dict(seen)}")


async def _hash_mismatches(client: KubeClient, ns: str) -> tuple[int, list[str]]:
    """Compares the hashes stored in ``ns`` with rayop's: (values compared, mismatches).

    Each RayService's clusters carry the hash of its ``rayClusterConfig``; each head pod the
    hash of its RayCluster's spec.
    """
    services = {
        s["metadata"]["name"]: s for s in (await client.list(RAY_SERVICES, namespace=ns))["items"]
    }
    clusters = {
        c["metadata"]["name"]: c for c in (await client.list(RAY_CLUSTERS, namespace=ns))["items"]
    }
    heads = await client.list(PODS, namespace=ns, label_selector="ray.io/node-type=head")
    compared, wrong = 0, []
    for name, cluster in clusters.items():
        owner = (cluster["metadata"].get("labels") or {}).get("ray.io/originated-from-cr-name")
        stored = (cluster["metadata"].get("annotations") or {}).get(SERVICE_HASH)
        if owner in services and stored:
            compared += 1
            ours = rayservice_cluster_hash(services[owner]["spec"]["rayClusterConfig"])
            if stored != ours:
                wrong.append(f"{ns}/{name} {SERVICE_HASH}: stored {stored}, rayop {ours}")
    for pod in heads["items"]:
        cluster = clusters.get((pod["metadata"].get("labels") or {}).get("ray.io/cluster", ""))
        stored = (pod["metadata"].get("annotations") or {}).get(POD_HASH)
        if cluster is not None and stored:
            compared += 1
            ours = raycluster_pod_hash(cluster["spec"])
            if stored != ours:
                wrong.append(
                    f"{ns}/{pod['metadata']['name']} {POD_HASH}: stored {stored}, rayop {ours}"
                )
    return compared, wrong


async def _wait_stable(client: KubeClient, namespaces: list[str], *, minimum: int) -> None:
    """Blocks until ``minimum`` RayService clusters or more exist in the namespaces and their
    count and the head pod count stay the same for 5 s (90 s at most)."""
    loop = asyncio.get_running_loop()
    deadline, last, since = loop.time() + 90, (-1, -1), loop.time()
    while loop.time() < deadline:
        service_clusters = heads = 0
        for ns in namespaces:
            for rc in (await client.list(RAY_CLUSTERS, namespace=ns))["items"]:
                service_clusters += SERVICE_HASH in (rc["metadata"].get("annotations") or {})
            selector = "ray.io/node-type=head"
            heads += len((await client.list(PODS, namespace=ns, label_selector=selector))["items"])
        if (service_clusters, heads) != last:
            last, since = (service_clusters, heads), loop.time()
        elif service_clusters >= minimum and loop.time() - since >= 5:
            return
        await asyncio.sleep(0.5)


def _tail(path: Path) -> str:
    return path.read_text()[-3000:]


def _size(path: Path) -> int:
    return path.stat().st_size


def _is(event: Obj, resource: str) -> bool:
    ref = event["objectRef"]
    return bool(ref.get("resource") == resource and not ref.get("subresource"))


async def test_rayop_takes_over_from_kuberay(
    real_kubeconfig: str, kuberay_binary: Path, audit_log: Path, tmp_path: Path
) -> None:
    await _takeover(
        real_kubeconfig,
        audit_log,
        lambda ns: kuberay_operator(kuberay_binary, real_kubeconfig, ns, tmp_path / "kuberay.log"),
        lambda ns: rayop_operator(real_kubeconfig, ns),
    )


async def test_kuberay_takes_over_from_rayop(
    real_kubeconfig: str, kuberay_binary: Path, audit_log: Path, tmp_path: Path
) -> None:
    await _takeover(
        real_kubeconfig,
        audit_log,
        lambda ns: rayop_operator(real_kubeconfig, ns),
        lambda ns: kuberay_operator(kuberay_binary, real_kubeconfig, ns, tmp_path / "kuberay.log"),
    )


async def test_kuberay_stores_the_hashes_rayop_computes_for_every_sample(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    """KubeRay builds the clusters of every KubeRay sample; rayop's hash function reproduces
    each RayService cluster's and each head pod's stored hash."""
    files = sorted(p.name for p in samples_dir().glob("ray-*.yaml"))
    async with user_client(real_kubeconfig) as client:
        namespaces: dict[str, str] = {}
        services = 0
        for file_name in files:
            ns = unique_namespace("hashes")
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
            namespaces[file_name] = ns
            for kind, resource in RAY_KINDS.items():
                for doc in load_docs(file_name, kind):
                    await client.create(resource, _in(ns, [doc]), namespace=ns)
                    services += kind == "RayService"
        log_path = tmp_path / "kuberay.log"
        async with kuberay_operator(
            kuberay_binary, real_kubeconfig, ",".join(namespaces.values()), log_path
        ):
            await _wait_stable(client, list(namespaces.values()), minimum=services)
        compared, wrong = 0, list[str]()
        for ns in namespaces.values():
            n, bad = await _hash_mismatches(client, ns)
            compared, wrong = compared + n, wrong + bad
        for ns in namespaces.values():
            await client.delete(NAMESPACES, ns)
    print(f"hashes compared: {compared} over {len(files)} samples ({services} RayServices)")
    assert compared >= 60 and not wrong, "\n".join(wrong)
