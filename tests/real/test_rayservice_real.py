"""rayop's RayService controller on a real kube-apiserver, with kwok pods and simulated Ray heads.

Serve configs reach the simulated heads through the real apiserver's services proxy (tunnelled
to the pod IPs by ``pod_network.py``); the serve Service's endpoints come from the real
EndpointSlice controller. KubeRay samples that fit plain kwok nodes become Ready, and a spec
change goes through a zero-downtime NewCluster upgrade: traffic moves only to a cluster whose
applications run, the RayService stays Ready throughout, and the old cluster is deleted after
``rayClusterDeletionDelaySeconds``.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.errors import NotFound
from rayop.kube.resources import ENDPOINT_SLICES, PODS, RAY_CLUSTERS, RAY_SERVICES, SERVICES
from rayop.testing import eventually

from .ray_support import World, load_docs, ray_world

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(150, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

SAMPLE_FILES = [
    "ray-service.sample.yaml",
    "ray-service.custom-serve-service.yaml",
    "ray-service.different-port.yaml",
    "ray-service.text-ml.yaml",
]
DELETION_DELAY = 4
Obj = dict[str, Any]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(real_kubeconfig: str) -> AsyncIterator[World]:
    """The pod network and rayop's controllers for every test of this module."""
    async with ray_world(real_kubeconfig) as running:
        yield running


async def _status(world: World, ns: str, name: str) -> Obj:
    return dict((await world.client.get(RAY_SERVICES, name, namespace=ns)).get("status") or {})


def _ready(status: Obj) -> bool:
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return (
        conditions.get("Ready") == "True"
        and status.get("serviceStatus") == "Running"
        and int(status.get("numServeEndpoints") or 0) > 0
    )


def _active(status: Obj, which: str = "active") -> str:
    return str((status.get(f"{which}ServiceStatus") or {}).get("rayClusterName") or "")


def _apps_running(world: World, ns: str, cluster: str) -> bool:
    dash = world.network.for_cluster(ns, cluster)
    return (
        dash is not None
        and bool(dash.serve.apps)
        and all(dash.serve.app_status(a) == "RUNNING" for a in dash.serve.apps.values())
    )


async def _create(world: World, rayservice: Obj) -> tuple[str, str]:
    ns = await world.namespace(f"rayservice-{secrets.token_hex(3)}")
    obj = copy.deepcopy(rayservice)
    obj["metadata"]["namespace"] = ns
    created = await world.client.create(RAY_SERVICES, obj, namespace=ns)
    return ns, created["metadata"]["name"]


async def _wait_ready(world: World, ns: str, name: str) -> Obj:
    async def ready() -> bool:
        return _ready(await _status(world, ns, name))

    await eventually(ready, timeout=120, what=f"RayService {ns}/{name} Ready")
    return await _status(world, ns, name)


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_sample_becomes_ready(world: World, file_name: str) -> None:
    ns, name = await _create(world, load_docs(file_name, "RayService")[0])
    status = await _wait_ready(world, ns, name)
    cluster = _active(status)
    assert cluster.startswith(f"{name}-")
    apps = status["activeServiceStatus"]["applicationStatuses"]
    assert apps and all(a["status"] == "RUNNING" for a in apps.values())
    assert _apps_running(world, ns, cluster)
    spec = (await world.client.get(RAY_SERVICES, name, namespace=ns))["spec"]
    serve_name = ((spec.get("serveService") or {}).get("metadata") or {}).get("name")
    serve = await world.client.get(SERVICES, serve_name or f"{name}-serve-svc", namespace=ns)
    assert serve["spec"]["selector"] == {"ray.io/cluster": cluster, "ray.io/serve": "true"}
    slices = await world.client.list(
        ENDPOINT_SLICES,
        namespace=ns,
        label_selector=f"kubernetes.io/service-name={serve['metadata']['name']}",
    )
    addresses = [
        a for s in slices["items"] for e in s.get("endpoints") or [] for a in e["addresses"]
    ]
    head = (
        await world.client.list(
            PODS, namespace=ns, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
        )
    )["items"][0]
    assert head["metadata"]["labels"]["ray.io/serve"] == "true"
    assert head["status"]["podIP"] in addresses


async def test_new_cluster_upgrade_keeps_serving(world: World) -> None:
    rayservice = load_docs("ray-service.sample.yaml", "RayService")[0]
    rayservice["spec"]["rayClusterDeletionDelaySeconds"] = DELETION_DELAY
    ns, name = await _create(world, rayservice)
    old = _active(await _wait_ready(world, ns, name))
    serve_name = f"{name}-serve-svc"
    samples: list[tuple[bool, str, bool]] = []
    """(RayService ready, cluster the serve Service selects, its applications running)."""

    async def sample_until_switched() -> None:
        while True:
            status = await _status(world, ns, name)
            svc = await world.client.get(SERVICES, serve_name, namespace=ns)
            selected = svc["spec"]["selector"]["ray.io/cluster"]
            samples.append((_ready(status), selected, _apps_running(world, ns, selected)))
            if selected != old and _active(status) == selected and not _active(status, "pending"):
                return
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample_until_switched())
    patch = {"spec": {"rayClusterConfig": {"headGroupSpec": {"rayStartParams": {"num-cpus": "0"}}}}}
    await world.client.patch(RAY_SERVICES, name, patch, namespace=ns)
    await asyncio.wait_for(sampler, 120)
    switched_at = time.monotonic()
    new = _active(await _status(world, ns, name))
    assert new not in ("", old)
    assert all(ready for ready, _, _ in samples), "the RayService stopped being Ready"
    assert all(running for _, _, running in samples), "traffic went to a cluster not serving"
    assert [c for i, (_, c, _) in enumerate(samples) if i == 0 or samples[i - 1][1] != c] == [
        old,
        new,
    ]

    async def old_gone() -> bool:
        try:
            await world.client.get(RAY_CLUSTERS, old, namespace=ns)
        except NotFound:
            return True
        return False

    await eventually(old_gone, timeout=60, what="old cluster deleted")
    assert time.monotonic() - switched_at >= DELETION_DELAY - 1.0, "deleted before the delay"
    assert _ready(await _status(world, ns, name))
