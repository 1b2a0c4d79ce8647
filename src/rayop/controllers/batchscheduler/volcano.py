"""Volcano (``--batch-scheduler=volcano``): one ``scheduling.volcano.sh/v1beta1`` PodGroup per gang.

As KubeRay v1.7 does it:

- The PodGroup is ``ray-<name>-pg``, owned (controller) by the RayCluster, or by the RayJob for
  a RayJob's cluster (a RayCluster a RayJob created gets none of its own). It copies the
  owner's annotations; ``spec.queue`` comes from the label ``volcano.sh/queue-name``,
  ``spec.priorityClassName`` from ``ray.io/priority-class-name``, ``spec.networkTopology``
  from ``volcano.sh/network-topology-mode`` and ``...-highest-tier-allowed``; status phase
  ``Pending``.
- ``minMember`` is the head plus the desired workers (the minimum ones with autoscaling);
  ``minResources`` their resources, plus, for a RayJob, the submitter's (K8sJobMode: its pod
  template; SidecarMode: the default submitter container) though the submitter is not counted
  in ``minMember``. A PodGroup whose size differs is updated (scale, suspended groups).
- Pods get the queue and priority labels, ``scheduling.k8s.io/group-name`` (the PodGroup),
  ``volcano.sh/task-spec`` (their group) and ``schedulerName: volcano``.
- A RayJob that is suspended, retried or finished has its PodGroup resized to what its cluster
  still runs (empty once the cluster is gone), so the queue's capacity is released. A PodGroup
  of that name the operator did not create is updated in place, never deleted.

A queue or priority class that does not exist is only written down: Volcano reports it.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import ResourceList, resource_list_json, sum_resource_lists
from rayop.controllers.batchscheduler import gang_size
from rayop.controllers.batchscheduler.interface import (
    RAY_CLUSTER,
    RAY_JOB,
    BatchSchedulingError,
    ParentKind,
    annotations_of,
    child_kind,
    controller_owner,
    labels_of,
    set_annotation,
    set_label,
    set_scheduler_name,
)
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_CLUSTERS

__all__ = ["PLUGIN_NAME", "PODGROUPS", "VolcanoScheduler", "pod_group_name"]

PLUGIN_NAME = "volcano"
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
QUEUE_NAME_LABEL = "volcano.sh/queue-name"
NETWORK_TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"
PRIORITY_CLASS_LABEL = "ray.io/priority-class-name"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
ORIGINATED_FROM_CRD = "ray.io/originated-from-crd"
ORIGINATED_FROM_CR_NAME = "ray.io/originated-from-cr-name"

_DEFAULT_SUBMITTER_RESOURCES: dict[str, Any] = {
    "requests": {"cpu": "500m", "memory": "200Mi"},
    "limits": {"cpu": "1", "memory": "1Gi"},
}
"""KubeRay's default submitter container resources (``GetDefaultSubmitterContainer``)."""


def _from_rayjob(obj: Obj) -> bool:
    return labels_of(obj).get(ORIGINATED_FROM_CRD) == "RayJob"


def pod_group_name(obj: Obj) -> str:
    """Returns ``ray-<name>-pg``, the RayJob's name for a cluster a RayJob created."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    if _from_rayjob(obj):
        name = labels_of(obj).get(ORIGINATED_FROM_CR_NAME) or name
    return f"ray-{name}-pg"


def _submitter_resources(rayjob: Obj) -> ResourceList:
    spec = rayjob.get("spec") or {}
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode":
        template = spec.get("submitterPodTemplate")
        if template:
            return gang_size.pod_resources((template or {}).get("spec") or {})
    elif mode != "SidecarMode":
        return {}
    container = {"resources": _DEFAULT_SUBMITTER_RESOURCES}
    return gang_size.pod_resources({"containers": [container]})


def _network_topology(owner: Obj, name: str, namespace: str) -> dict[str, Any] | None:
    owner_labels = labels_of(owner)
    if NETWORK_TOPOLOGY_MODE_LABEL not in owner_labels:
        return None
    topology: dict[str, Any] = {"mode": owner_labels[NETWORK_TOPOLOGY_MODE_LABEL]}
    tier = owner_labels.get(NETWORK_TOPOLOGY_TIER_LABEL)
    if tier is not None:
        try:
            topology["highestTierAllowed"] = int(tier)
        except ValueError:
            raise BatchSchedulingError(
                f"failed to convert {NETWORK_TOPOLOGY_TIER_LABEL} label to int: "
                f'strconv.Atoi: parsing "{tier}": invalid syntax for podgroup {name} '
                f"in namespace {namespace}"
            ) from None
    return topology


def build_pod_group(
    kind: ParentKind, owner: Obj, size: int, resources: ResourceList
) -> dict[str, Any]:
    """Returns the PodGroup KubeRay creates for ``owner`` (wire JSON).

    Raises:
        BatchSchedulingError: the network-topology tier label is not an integer.
    """
    meta = owner.get("metadata") or {}
    name, namespace = pod_group_name(owner), str(meta.get("namespace", ""))
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "ownerReferences": [controller_owner(kind, owner)],
    }
    if annotations_of(owner):
        metadata["annotations"] = dict(annotations_of(owner))
    spec: dict[str, Any] = {"minResources": resource_list_json(resources)}
    if size:
        spec["minMember"] = size  # Go omits a zero minMember
    topology = _network_topology(owner, name, namespace)
    if topology is not None:
        spec["networkTopology"] = topology
    owner_labels = labels_of(owner)
    if QUEUE_NAME_LABEL in owner_labels:
        spec["queue"] = owner_labels[QUEUE_NAME_LABEL]
    if PRIORITY_CLASS_LABEL in owner_labels:
        spec["priorityClassName"] = owner_labels[PRIORITY_CLASS_LABEL]
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


async def sync_pod_group(
    client: KubeClient, kind: ParentKind, owner: Obj, size: int, resources: ResourceList
) -> bool:
    """Creates the owner's PodGroup, or updates its size; returns whether it wrote; blocks."""
    meta = owner.get("metadata") or {}
    name, namespace = pod_group_name(owner), str(meta.get("namespace", ""))
    try:
        current = await client.get(PODGROUPS, name, namespace=namespace)
    except NotFound:
        desired = build_pod_group(kind, owner, size, resources)
        try:
            await client.create(PODGROUPS, desired, namespace=namespace)
        except AlreadyExists:
            return False
        return True
    spec = current.get("spec") or {}
    wanted = resource_list_json(resources)
    current_resources = spec.get("minResources")
    if (
        (spec.get("minMember") or 0) == size
        and current_resources is not None
        and _same_resources(current_resources, resources)
    ):
        return False
    updated = copy.deepcopy(current)
    updated_spec = updated.setdefault("spec", {})
    updated_spec["minResources"] = wanted
    if size:
        updated_spec["minMember"] = size
    else:
        updated_spec.pop("minMember", None)
    await client.update(PODGROUPS, updated)
    return True


def _same_resources(current: Obj, desired: ResourceList) -> bool:
    """Compares by value, as ``quota.Equals`` does (a zero amount equals a missing one)."""
    parsed = gang_size.pod_resources({"containers": [{"resources": {"requests": current}}]})
    names = set(parsed) | set(desired)
    zero = 0
    return all(
        (parsed[n].value if n in parsed else zero) == (desired[n].value if n in desired else zero)
        for n in names
    )


class VolcanoScheduler:
    """KubeRay's ``VolcanoBatchScheduler``."""

    name = PLUGIN_NAME

    async def submit(self, client: KubeClient, kind: ParentKind, parent: Obj) -> None:
        """Creates or resizes the PodGroup of a RayCluster (not one a RayJob made) or RayJob.

        Raises:
            BatchSchedulingError: a RayJob with ``clusterSelector`` (no cluster spec), or a bad
                network-topology tier label.
        """
        spec = parent.get("spec") or {}
        if kind == RAY_CLUSTER:
            if _from_rayjob(parent):
                return
            size, resources = gang_size.gang_params(spec)
            await sync_pod_group(client, kind, parent, size, resources)
            return
        cluster_spec = spec.get("rayClusterSpec")
        if not cluster_spec:
            meta = parent.get("metadata") or {}
            raise BatchSchedulingError(
                "gang scheduling does not support RayJob "
                f"{meta.get('namespace', '')}/{meta.get('name', '')} referencing an existing "
                "RayCluster"
            )
        size, resources = gang_size.gang_params(cluster_spec)
        total = sum_resource_lists([resources, _submitter_resources(parent)])
        await sync_pod_group(client, kind, parent, size, total)

    def add_metadata(
        self, kind: ParentKind, parent: Obj, child: dict[str, Any], group_name: str
    ) -> None:
        """Queue and priority labels, group-name and task-spec annotations, schedulerName."""
        del kind
        parent_labels = labels_of(parent)
        for key in (QUEUE_NAME_LABEL, PRIORITY_CLASS_LABEL):
            if parent_labels.get(key):
                set_label(child, key, parent_labels[key])
        set_annotation(child, GROUP_NAME_ANNOTATION, pod_group_name(parent))
        set_annotation(child, TASK_SPEC_ANNOTATION, group_name)
        set_scheduler_name(child, child_kind(child), PLUGIN_NAME)

    async def cleanup(self, client: KubeClient, rayjob: Obj) -> bool:
        """Resizes a RayJob's PodGroup to its live cluster (empty once the cluster is gone)."""
        spec = rayjob.get("spec") or {}
        if spec.get("clusterSelector"):
            return False
        cluster_name = (rayjob.get("status") or {}).get("rayClusterName") or ""
        if not cluster_name:
            return False
        namespace = str((rayjob.get("metadata") or {}).get("namespace", ""))
        size, resources = 0, ResourceList()
        try:
            cluster = await client.get(RAY_CLUSTERS, cluster_name, namespace=namespace)
        except NotFound:
            cluster = None
        if cluster is not None and not (cluster.get("metadata") or {}).get("deletionTimestamp"):
            size, resources = gang_size.gang_params(cluster.get("spec") or {})
        return await sync_pod_group(client, RAY_JOB, rayjob, size, resources)
