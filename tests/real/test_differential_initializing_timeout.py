"""Differential test: ``ray.io/initializing-timeout`` on a RayService that can never be ready.

On the real control plane a RayService whose head pod cannot be scheduled never becomes ready.
KubeRay v1.7.0's binary runs it first, then rayop does; both must mark it ``Ready=False`` with
reason ``InitializingTimeout`` and KubeRay's message, record the Warning event
``RayServiceInitializingTimeout``, clear the cluster names and delete the pending cluster
(``rayClusterDeletionDelaySeconds: 0``). Durations in messages are compared as ``<d>``.
"""

from __future__ import annotations

import asyncio
import copy
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import EVENTS, RAY_CLUSTERS, RAY_SERVICES
from rayop.testing import ALL_KINDS, open_operator

from .real_support import create_namespace, kuberay_running, user_client

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(300, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

KUBERAY_VERSION = "v1.7.0"
TIMEOUT = "20s"
Obj = dict[str, Any]
CONTAINERS = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}
UNSCHEDULABLE = {
    "spec": {**CONTAINERS["spec"], "nodeSelector": {"rayop.test/no-such-node": "true"}}
}
"""A head pod no node can take: it stays Pending, so neither operator ever reaches a Ray
dashboard and each pass goes on to the status (where the timeout is checked). With a ready
head whose dashboard cannot be reached, neither KubeRay nor rayop ever gets that far: the pass
ends on the dashboard error, and the RayService stays Initializing."""
_DURATION = re.compile(r"(\d+(\.\d+)?(h|ms|\u00b5s|ns|m|s))+")


def _service() -> Obj:
    group = {
        "groupName": "small",
        "replicas": 0,
        "minReplicas": 0,
        "maxReplicas": 1,
        "rayStartParams": {},
        "template": copy.deepcopy(CONTAINERS),
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "svc", "annotations": {"ray.io/initializing-timeout": TIMEOUT}},
        "spec": {
            "rayClusterDeletionDelaySeconds": 0,
            "serveConfigV2": "applications: []\n",
            "rayClusterConfig": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"rayStartParams": {}, "template": copy.deepcopy(UNSCHEDULABLE)},
                "workerGroupSpecs": [group],
            },
        },
    }


def _durations(text: str) -> str:
    return _DURATION.sub("<d>", text)


async def _outcome(client: KubeClient, namespace: str) -> Obj:
    """Applies the RayService, waits for the timeout and the cluster's deletion; returns what
    the status, the events and the remaining clusters say."""
    await client.create(RAY_SERVICES, _service(), namespace=namespace)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    status: Obj = {}
    clusters: list[Obj] = []
    while loop.time() < deadline:
        status = (await client.get(RAY_SERVICES, "svc", namespace=namespace)).get("status") or {}
        reasons = {c["type"]: c["reason"] for c in status.get("conditions") or []}
        clusters = (await client.list(RAY_CLUSTERS, namespace=namespace))["items"]
        if reasons.get("Ready") == "InitializingTimeout" and not clusters:
            break
        await asyncio.sleep(1)
    events = (await client.list(EVENTS, namespace=namespace))["items"]
    return {
        "conditions": sorted(
            (c["type"], c["status"], c["reason"], _durations(c.get("message", "")))
            for c in status.get("conditions") or []
        ),
        "clusterNames": [
            (status.get(k) or {}).get("rayClusterName", "")
            for k in ("activeServiceStatus", "pendingServiceStatus")
        ],
        "serviceStatus": status.get("serviceStatus", ""),
        "timeoutEvents": sorted(
            {
                (e.get("type"), _durations(str(e.get("note", ""))))
                for e in events
                if e.get("reason") == "RayServiceInitializingTimeout"
            }
        ),
        "clusters": [c["metadata"]["name"] for c in clusters],
    }


async def test_the_same_timeout_as_kuberay(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path: Path
) -> None:
    token = secrets.token_hex(2)
    kuberay_ns, rayop_ns = f"tk-{token}", f"tr-{token}"
    log_path = tmp_path / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in (kuberay_ns, rayop_ns):
            await create_namespace(client, ns)
        async with kuberay_running(
            kuberay_binary, real_kubeconfig, log_path, f"--watch-namespace={kuberay_ns}"
        ):
            kuberay = await _outcome(client, kuberay_ns)
        config = await load_config(kubeconfig=real_kubeconfig)
        async with open_operator(
            config, watch_namespaces=[rayop_ns], controllers=ALL_KINDS, ready_timeout=60
        ):
            rayop = await _outcome(client, rayop_ns)
    message = (
        "RayService failed to become ready within the configured timeout of <d>. Time spent "
        "initializing: <d>"
    )
    assert ("Ready", "False", "InitializingTimeout", message) in kuberay["conditions"], kuberay
    assert kuberay["clusters"] == [], kuberay
    assert rayop == kuberay
