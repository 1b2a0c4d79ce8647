"""Differential test: the Warning events KubeRay v1.7.0 and rayop record for invalid specs.

Each object below passes the CRD schema but fails one of KubeRay's checks in
``utils/validation.go``. KubeRay's operator binary runs first on its namespaces and is
stopped; then rayop runs on a second set. For every object, the Warning events (reason and
note, the namespace replaced by ``<ns>``) must be the same: the same check refuses it, with
the same reason and message.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resource import Resource
from rayop.kube.resources import EVENTS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.testing import ALL_KINDS, open_operator

from .real_support import create_namespace, kuberay_running, user_client

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(240, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

KUBERAY_VERSION = "v1.7.0"
Obj = dict[str, Any]
CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}


def _cluster_spec(**changes: Any) -> Obj:
    spec: Obj = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": copy.deepcopy(CONTAINERS)},
        "workerGroupSpecs": [
            {
                "groupName": "small",
                "replicas": 0,
                "minReplicas": 0,
                "maxReplicas": 2,
                "rayStartParams": {},
                "template": copy.deepcopy(CONTAINERS),
            }
        ],
    }
    spec.update(changes)
    return spec


def _worker(**changes: Any) -> Obj:
    spec = _cluster_spec()
    spec["workerGroupSpecs"][0].update(changes)
    return spec


def _obj(kind: str, name: str, spec: Obj, annotations: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


def _job(name: str, **spec: Any) -> Obj:
    return _obj("RayJob", name, {"entrypoint": "python x.py", **spec})


def _service(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    full = {"serveConfigV2": "applications: []\n", "rayClusterConfig": _cluster_spec(), **spec}
    return _obj("RayService", name, full, annotations)


CASES: list[Obj] = [
    _obj("RayCluster", "min-over-max", _worker(minReplicas=3, maxReplicas=2)),
    _obj("RayCluster", "labels-param", _worker(rayStartParams={"labels": "a=b"})),
    _obj("RayCluster", "idle-no-v2", _worker(idleTimeoutSeconds=30)),
    _obj(
        "RayCluster",
        "token-old-ray",
        _cluster_spec(rayVersion="2.46.0", authOptions={"mode": "token"}),
    ),
    _obj(
        "RayCluster",
        "k8s-auth-no-token",
        _cluster_spec(authOptions={"enableK8sTokenAuth": True}),
    ),
    _obj(
        "RayCluster",
        "autoscaler-env",
        _cluster_spec(
            enableInTreeAutoscaling=True,
            autoscalerOptions={"env": [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": "x"}]},
        ),
    ),
    _job("suspend-no-shutdown", rayClusterSpec=_cluster_spec(), suspend=True),
    _job(
        "selector-backoff",
        clusterSelector={"ray.io/cluster": "elsewhere"},
        backoffLimit=2,
    ),
    _job(
        "interactive-backoff",
        rayClusterSpec=_cluster_spec(),
        submissionMode="InteractiveMode",
        backoffLimit=1,
    ),
    _job(
        "k8s-auth",
        rayClusterSpec=_cluster_spec(
            rayVersion="2.55.0", authOptions={"mode": "token", "enableK8sTokenAuth": True}
        ),
    ),
    _job(
        "rules-and-shutdown",
        rayClusterSpec=_cluster_spec(),
        shutdownAfterJobFinishes=True,
        deletionStrategy={
            "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]
        },
    ),
    _service("timeout-format", {"ray.io/initializing-timeout": "soon"}),
    _service(
        "head-svc-name",
        rayClusterConfig={
            **_cluster_spec(),
            "headGroupSpec": {
                "rayStartParams": {},
                "template": copy.deepcopy(CONTAINERS),
                "headService": {"metadata": {"name": "mine"}},
            },
        },
    ),
]
CASES += [
    _obj(
        "RayCluster",
        "resources-twice",
        _worker(rayStartParams={"num-cpus": "1"}, resources={"CPU": "1"}),
    ),
    _obj("RayCluster", "priority-no-version", {**_worker(priority=2), "rayVersion": ""}),
    _obj(
        "RayCluster",
        "ft-annotation-and-options",
        _cluster_spec(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}),
        {"ray.io/ft-enabled": "true"},
    ),
    _obj(
        "RayCluster",
        "suspended-autoscaling",
        {**_worker(suspend=True), "enableInTreeAutoscaling": True},
    ),
    _obj(
        "RayCluster",
        "k8s-auth-secret",
        _cluster_spec(
            rayVersion="2.55.0",
            authOptions={"mode": "token", "enableK8sTokenAuth": True, "secretName": "s"},
        ),
    ),
    _obj(
        "RayCluster",
        "negative-autoscaler-idle",
        _cluster_spec(enableInTreeAutoscaling=True, autoscalerOptions={"idleTimeoutSeconds": -1}),
    ),
    _job(
        "duplicate-rules",
        rayClusterSpec=_cluster_spec(),
        deletionStrategy={
            "deletionRules": [
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED"}},
                {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 5}},
            ]
        },
    ),
    _job(
        "delete-workers-autoscaling",
        rayClusterSpec={**_cluster_spec(), "enableInTreeAutoscaling": True},
        deletionStrategy={
            "deletionRules": [{"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED"}}]
        },
    ),
    _job(
        "selector-delete-cluster",
        clusterSelector={"ray.io/cluster": "elsewhere"},
        deletionStrategy={
            "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]
        },
    ),
    _job(
        "sidecar-restart-policy",
        submissionMode="SidecarMode",
        rayClusterSpec={
            **_cluster_spec(),
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {**CONTAINERS["spec"], "restartPolicy": "Always"}},
            },
        },
    ),
    _service("timeout-zero", {"ray.io/initializing-timeout": "0"}),
    _service(
        "incremental-interval",
        rayClusterConfig={**_cluster_spec(), "enableInTreeAutoscaling": True},
        upgradeStrategy={
            "type": "NewClusterWithIncrementalUpgrade",
            "clusterUpgradeOptions": {
                "gatewayClassName": "istio",
                "stepSizePercent": 10,
                "intervalSeconds": 0,
            },
        },
    ),
]
Outcome = tuple[dict[str, Any], dict[str, Any]]
"""(warnings by object, statuses by object) of one operator."""
CASES += [  # alpha gates, off by default in both operators
    _obj("RayCluster", "gate-network-policy", _cluster_spec(networkPolicy={"mode": "DenyAll"})),
    _obj("RayCluster", "gate-mtls", _cluster_spec(tlsOptions={"enabled": False})),
    _obj("RayCluster", "gate-history", _cluster_spec(historyServerOptions={})),
    _obj(
        "RayCluster",
        "gate-rocksdb",
        _cluster_spec(gcsFaultToleranceOptions={"backend": "rocksdb"}),
    ),
    _job("gate-job-network", rayClusterSpec=_cluster_spec(networkPolicy={"mode": "DenyAll"})),
    _service("gate-service-mtls", rayClusterConfig=_cluster_spec(tlsOptions={"enabled": True})),
]
RESOURCES: dict[str, Resource] = {
    "RayCluster": RAY_CLUSTERS,
    "RayJob": RAY_JOBS,
    "RayService": RAY_SERVICES,
}


async def _warnings(client: KubeClient, namespace: str) -> dict[str, list[tuple[str, str]]]:
    """Returns the Warning events of each object: (reason, note with ``<ns>``), sorted."""
    events = (await client.list(EVENTS, namespace=namespace))["items"]
    found: dict[str, set[tuple[str, str]]] = {}
    for event in events:
        if event.get("type") != "Warning":
            continue
        name = (event.get("regarding") or {}).get("name", "")
        note = str(event.get("note", "")).replace(namespace, "<ns>")
        found.setdefault(name, set()).add((str(event.get("reason")), note))
    return {name: sorted(items) for name, items in found.items()}


async def _statuses(client: KubeClient, namespace: str) -> dict[str, Any]:
    """Returns what each RayJob and RayService status says about the refusal."""
    found: dict[str, Any] = {}
    for job in (await client.list(RAY_JOBS, namespace=namespace))["items"]:
        status = job.get("status") or {}
        found[job["metadata"]["name"]] = [
            status.get(k) for k in ("jobDeploymentStatus", "reason", "message")
        ]
    for service in (await client.list(RAY_SERVICES, namespace=namespace))["items"]:
        conditions = (service.get("status") or {}).get("conditions") or []
        found[service["metadata"]["name"]] = [
            [c.get(k) for k in ("type", "status", "reason", "message")]
            for c in conditions
            if c.get("type") == "Ready"
        ]
    return found


async def _apply_all(client: KubeClient, namespace: str) -> list[str]:
    """Creates every case; returns the names the API server admitted."""
    admitted = []
    for obj in CASES:
        await client.create(RESOURCES[obj["kind"]], obj, namespace=namespace)
        admitted.append(obj["metadata"]["name"])
    return admitted


async def _settle(client: KubeClient, namespace: str, names: list[str]) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        warnings = await _warnings(client, namespace)
        if all(n in warnings for n in names) or asyncio.get_running_loop().time() > deadline:
            await asyncio.sleep(3)  # any second event (a status write retried) lands too
            return await _warnings(client, namespace)
        await asyncio.sleep(0.5)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def warnings(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Outcome, Outcome]]:
    """Runs KubeRay, then rayop, over the cases; yields the warnings and statuses of each."""
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"vk-{token}", f"vr-{token}"
    log_path = tmp_path_factory.mktemp("kuberay") / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        watch = f"--watch-namespace={kuberay_ns}"
        async with kuberay_running(kuberay_binary, real_kubeconfig, log_path, watch):
            names = await _apply_all(client, kuberay_ns)
            kuberay = await _settle(client, kuberay_ns, names)
            kuberay_statuses = await _statuses(client, kuberay_ns)
        config = await load_config(kubeconfig=real_kubeconfig)
        async with open_operator(
            config, watch_namespaces=[rayop_ns], controllers=ALL_KINDS, ready_timeout=60
        ):
            names = await _apply_all(client, rayop_ns)
            rayop = await _settle(client, rayop_ns, names)
            rayop_statuses = await _statuses(client, rayop_ns)
    yield (kuberay, kuberay_statuses), (rayop, rayop_statuses)


@pytest.mark.parametrize("name", [c["metadata"]["name"] for c in CASES])
async def test_the_same_warning_as_kuberay(warnings: tuple[Outcome, Outcome], name: str) -> None:
    (kuberay, kuberay_statuses), (rayop, rayop_statuses) = warnings
    assert kuberay.get(name), f"KubeRay recorded no warning for {name}"
    assert rayop.get(name) == kuberay[name]
    assert rayop_statuses.get(name) == kuberay_statuses.get(name), "the same status"
