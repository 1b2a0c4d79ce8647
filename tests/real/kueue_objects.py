"""Kueue objects and queued Ray objects of the Kueue tests (``test_kueue.py``): a ClusterQueue
with its LocalQueue and ResourceFlavor per test, WorkloadPriorityClasses, the Workload Kueue made
for an object, and KubeRay's toy RayJob and a small RayCluster labelled for a queue."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

from rayop.kube.errors import AlreadyExists, NotFound
from rayop.testing import eventually

from .kueue_support import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    World,
)
from .ray_support import load_docs

Obj = dict[str, Any]
FLAVOR = "rayop-kueue-kwok"
FLAVOR_NODE_LABELS = {"type": "kwok"}
"""Every kwok node of the tier carries this label; Kueue injects it as a node selector."""
TOY_SAMPLE = "ray-job.kueue-toy-sample.yaml"
QUOTA = {"cpu": "3", "memory": "8Gi"}
"""Fits one toy RayJob (2.5 CPU with its submitter) or one test RayCluster (2 CPU), not two."""


# -- Kueue objects -------------------------------------------------------------------------


async def _create_if_absent(world: World, res: Any, obj: Obj) -> None:
    with contextlib.suppress(AlreadyExists):
        await world.client.create(res, obj)


@contextlib.asynccontextmanager
async def queue(
    world: World, prefix: str, *, preemption: Obj | None = None
) -> AsyncIterator[tuple[str, str]]:
    """A namespace with a LocalQueue ``lq`` on a ClusterQueue of :data:`QUOTA`; yields
    (namespace, LocalQueue name). The ClusterQueue is deleted when the block exits."""
    ns = await world.namespace(prefix)
    await _create_if_absent(
        world,
        RESOURCE_FLAVORS,
        {"metadata": {"name": FLAVOR}, "spec": {"nodeLabels": FLAVOR_NODE_LABELS}},
    )
    resources = [{"name": name, "nominalQuota": value} for name, value in QUOTA.items()]
    spec: Obj = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "resourceGroups": [
            {"coveredResources": list(QUOTA), "flavors": [{"name": FLAVOR, "resources": resources}]}
        ],
    }
    if preemption:
        spec["preemption"] = preemption
    cq = f"cq-{ns}"
    await world.client.create(CLUSTER_QUEUES, {"metadata": {"name": cq}, "spec": spec})
    await world.client.create(
        LOCAL_QUEUES,
        {"metadata": {"name": "lq", "namespace": ns}, "spec": {"clusterQueue": cq}},
        namespace=ns,
    )

    async def active() -> bool:
        obj = await world.client.get(CLUSTER_QUEUES, cq)
        conditions = (obj.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Active" and c["status"] == "True" for c in conditions)

    await eventually(active, timeout=30, interval=0.5, what=f"ClusterQueue {cq} active")
    try:
        yield ns, "lq"
    finally:
        with contextlib.suppress(NotFound):
            await world.client.delete(CLUSTER_QUEUES, cq)


async def priority_class(world: World, name: str, value: int) -> None:
    obj = {"metadata": {"name": name}, "value": value, "description": "rayop Kueue tests"}
    await _create_if_absent(world, WORKLOAD_PRIORITY_CLASSES, obj)


async def workload_of(world: World, ns: str, kind: str, name: str) -> Obj | None:
    """Returns the Workload Kueue made for the ``kind`` object ``name`` (None before it)."""
    for wl in (await world.client.list(WORKLOADS, namespace=ns))["items"]:
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o["kind"] == kind and o["name"] == name for o in owners):
            return dict(wl)
    return None


def condition(obj: Obj | None, kind: str) -> Obj:
    """Returns the condition ``kind`` of an object's status ({} when absent)."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return dict(cond)
    return {}


# -- Ray objects ---------------------------------------------------------------------------


def toy_rayjob(name: str, local_queue: str, *, priority_class: str = "") -> Obj:
    """KubeRay's Kueue toy sample RayJob, named ``name`` and queued on ``local_queue``."""
    rayjob = copy.deepcopy(load_docs(TOY_SAMPLE, "RayJob")[0])
    labels = {QUEUE_LABEL: local_queue}
    if priority_class:
        labels[PRIORITY_LABEL] = priority_class
    rayjob["metadata"] = {"name": name, "labels": labels}
    return rayjob


def small_raycluster(name: str, local_queue: str) -> Obj:
    """A RayCluster of one head and one worker (1 CPU, 1Gi each) queued on ``local_queue``."""

    def template(container: str) -> Obj:
        requests = {"cpu": "1", "memory": "1Gi"}
        spec: Obj = {"name": container, "image": "rayproject/ray:2.52.0"}
        spec["resources"] = {"requests": requests, "limits": dict(requests)}
        return {"spec": {"containers": [spec]}}

    return {
        "metadata": {"name": name, "labels": {QUEUE_LABEL: local_queue}},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": template("ray-worker"),
                }
            ],
        },
    }


def assert_admitted(workload: Obj | None) -> None:
    """Checks that a Workload has quota reserved and is admitted."""
    assert condition(workload, "QuotaReserved").get("status") == "True", workload
    assert condition(workload, "Admitted").get("status") == "True", workload
