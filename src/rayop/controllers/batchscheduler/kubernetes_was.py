"""Kubernetes workload-aware scheduling (the ``KubernetesWAS`` gate): ``scheduling.k8s.io/v1alpha2``.

As KubeRay v1.7 does it, for a RayCluster labelled ``ray.io/gang-scheduling-enabled: "true"``
(any case) and without autoscaling, the operator keeps two objects, both named after the
cluster, labelled ``ray.io/cluster`` and controlled by it:

- a Workload ``<cluster>`` whose ``controllerRef`` is the RayCluster and whose one pod group
  template ``cluster`` has a gang policy with ``minCount`` the head plus the desired workers;
- a PodGroup ``<cluster>-cluster`` referring to that template, with the same policy.

Pods get ``schedulerName: default-scheduler`` and ``spec.schedulingGroup.podGroupName``. A
changed ``minCount`` (a scale, a suspended group) makes the operator delete the stale object
(the PodGroup first, its ``scheduling.k8s.io/podgroup-protection`` finalizer removed) and
retry; a cluster that stops qualifying (the label removed, autoscaling on) has both deleted.
An object of either name the cluster does not control is never touched: the pass fails with
KubeRay's message instead. RayJobs get nothing of their own.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.batchscheduler import gang_size
from rayop.controllers.batchscheduler.interface import (
    RAY_CLUSTER,
    ParentKind,
    child_kind,
    controller_owner,
    is_controlled_by,
    labels_of,
    set_scheduler_name,
)
from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.kube.resource import Resource

__all__ = ["GROUP_VERSION", "PLUGIN_NAME", "PODGROUPS", "WORKLOADS", "KubernetesWASScheduler"]

PLUGIN_NAME = "kubernetes-was-v1alpha2"
GROUP_VERSION = "scheduling.k8s.io/v1alpha2"
WORKLOADS = Resource("scheduling.k8s.io", "v1alpha2", "workloads", "Workload")
PODGROUPS = Resource("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup")
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
TEMPLATE_NAME = "cluster"
GANG_SCHEDULING_LABEL = "ray.io/gang-scheduling-enabled"
CLUSTER_LABEL = "ray.io/cluster"
DEFAULT_SCHEDULER = "default-scheduler"


class RetryLaterError(Exception):
    """A stale object is being replaced; the pass fails and is retried (KubeRay's message)."""


def skip_reason(cluster: Obj) -> str:
    """Returns why a RayCluster is not gang-scheduled ("" when it is)."""
    if str(labels_of(cluster).get(GANG_SCHEDULING_LABEL, "")).lower() != "true":
        return "gang scheduling not enabled on RayCluster"
    if gang_size.autoscaling_enabled(cluster.get("spec") or {}):
        return "autoscaling is not yet supported"
    return ""


def pod_group_name(cluster_name: str) -> str:
    """Returns ``<cluster>-cluster``."""
    return f"{cluster_name}-{TEMPLATE_NAME}"


def _policy(cluster: Obj) -> dict[str, Any]:
    return {"gang": {"minCount": 1 + gang_size.desired_replicas(cluster.get("spec") or {})}}


def _meta(cluster: Obj, name: str) -> dict[str, Any]:
    meta = cluster.get("metadata") or {}
    return {
        "name": name,
        "namespace": meta.get("namespace", ""),
        "labels": {CLUSTER_LABEL: meta.get("name", "")},
        "ownerReferences": [controller_owner(RAY_CLUSTER, cluster)],
    }


def build_workload(cluster: Obj) -> dict[str, Any]:
    """Returns the Workload KubeRay creates for a RayCluster (wire JSON)."""
    name = str((cluster.get("metadata") or {}).get("name", ""))
    return {
        "apiVersion": WORKLOADS.api_version,
        "kind": WORKLOADS.kind,
        "metadata": _meta(cluster, name),
        "spec": {
            "controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": name},
            "podGroupTemplates": [{"name": TEMPLATE_NAME, "schedulingPolicy": _policy(cluster)}],
        },
    }


def build_pod_group(cluster: Obj) -> dict[str, Any]:
    """Returns the PodGroup KubeRay creates for a RayCluster (wire JSON)."""
    name = str((cluster.get("metadata") or {}).get("name", ""))
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": _meta(cluster, pod_group_name(name)),
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": name, "podGroupTemplateName": TEMPLATE_NAME}
            },
            "schedulingPolicy": _policy(cluster),
        },
    }


def _min_count(policy: Any) -> int | None:
    gang = (policy or {}).get("gang") if isinstance(policy, dict) else None
    return gang.get("minCount", 0) if isinstance(gang, dict) else None


def _workload_stale(existing: Obj, desired: Obj) -> bool:
    templates = (existing.get("spec") or {}).get("podGroupTemplates") or []
    if len(templates) != 1:
        return True
    wanted = desired["spec"]["podGroupTemplates"][0]
    current = templates[0]
    count = _min_count(current.get("schedulingPolicy"))
    return current.get("name") != wanted["name"] or count != _min_count(wanted["schedulingPolicy"])


def _where(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


async def _get(client: KubeClient, res: Resource, name: str, namespace: str) -> Obj | None:
    try:
        return await client.get(res, name, namespace=namespace)
    except NotFound:
        return None


async def _delete(client: KubeClient, res: Resource, obj: Obj) -> None:
    """Deletes ``obj`` with a uid precondition; already gone is fine."""
    meta = obj.get("metadata") or {}
    try:
        await client.delete(
            res,
            str(meta.get("name")),
            namespace=str(meta.get("namespace")),
            preconditions={"uid": str(meta.get("uid"))},
        )
    except NotFound:
        return


async def _delete_pod_group(client: KubeClient, pod_group: Obj) -> bool:
    """Removes the protection finalizer, then deletes; returns whether it changed anything."""
    changed = False
    finalizers = list((pod_group.get("metadata") or {}).get("finalizers") or [])
    if PROTECTION_FINALIZER in finalizers:
        updated = copy.deepcopy(dict(pod_group))
        updated["metadata"]["finalizers"] = [f for f in finalizers if f != PROTECTION_FINALIZER]
        try:
            await client.update(PODGROUPS, updated)
        except NotFound:
            return True
        changed = True
    if (pod_group.get("metadata") or {}).get("deletionTimestamp"):
        return changed
    await _delete(client, PODGROUPS, pod_group)
    return True


async def _existing_own(
    client: KubeClient, res: Resource, desired: Obj, cluster: Obj, namespace: str
) -> Obj | None:
    """Creates ``desired`` when no object has its name (returns None), else returns that object.

    Raises:
        RetryLaterError: the object of that name is not controlled by ``cluster``.
    """
    existing = await _get(client, res, desired["metadata"]["name"], namespace)
    if existing is None:
        await client.create(res, desired, namespace=namespace)
        return None
    if not is_controlled_by(existing, cluster):
        raise RetryLaterError(
            f"{res.kind} {_where(existing)} already exists and is not owned by this RayCluster; "
            "rename it or use a different RayCluster name to avoid the collision"
        )
    return existing


class KubernetesWASScheduler:
    """KubeRay's ``KubernetesWASV1Alpha2Scheduler``."""

    name = PLUGIN_NAME

    async def submit(self, client: KubeClient, kind: ParentKind, parent: Obj) -> None:
        """Keeps a gang-scheduled RayCluster's Workload and PodGroup; removes them otherwise.

        Raises:
            RetryLaterError: a stale object was deleted, one is being deleted, or an object of
                that name is not this cluster's.
        """
        if kind != RAY_CLUSTER:
            return
        if skip_reason(parent):
            await self.release(client, parent)
            return
        namespace = str((parent.get("metadata") or {}).get("namespace", ""))
        workload = build_workload(parent)
        pod_group = build_pod_group(parent)
        await self._sync_workload(client, parent, workload, pod_group, namespace)
        await self._sync_pod_group(client, parent, pod_group, namespace)

    async def _sync_workload(
        self, client: KubeClient, cluster: Obj, desired: Obj, pod_group: Obj, namespace: str
    ) -> None:
        existing = await _existing_own(client, WORKLOADS, desired, cluster, namespace)
        if existing is None:
            return
        where = _where(existing)
        if (existing.get("metadata") or {}).get("deletionTimestamp"):
            raise RetryLaterError(f"Workload {where} is being deleted, will retry")
        if not _workload_stale(existing, desired):
            return
        group = await _get(client, PODGROUPS, pod_group["metadata"]["name"], namespace)
        if group is not None and is_controlled_by(group, cluster):
            await _delete_pod_group(client, group)
            raise RetryLaterError(
                f"deleted PodGroup {_where(group)} before replacing stale Workload, will retry "
                "after deletion completes"
            )
        await _delete(client, WORKLOADS, existing)
        raise RetryLaterError(
            f"deleted stale Workload {where}, will retry after deletion completes"
        )

    async def _sync_pod_group(
        self, client: KubeClient, cluster: Obj, desired: Obj, namespace: str
    ) -> None:
        existing = await _existing_own(client, PODGROUPS, desired, cluster, namespace)
        if existing is None:
            return
        where = _where(existing)
        if (existing.get("metadata") or {}).get("deletionTimestamp"):
            await _delete_pod_group(client, existing)
            raise RetryLaterError(f"PodGroup {where} is being deleted, will retry")
        count = _min_count((existing.get("spec") or {}).get("schedulingPolicy"))
        if count is not None and count == _min_count(desired["spec"]["schedulingPolicy"]):
            return
        await _delete_pod_group(client, existing)
        raise RetryLaterError(
            f"deleted stale PodGroup {where}, will retry after deletion completes"
        )

    async def release(self, client: KubeClient, cluster: Obj) -> bool:
        """Deletes the cluster's own PodGroup (first) and Workload; returns whether it did.

        Raises:
            RetryLaterError: the PodGroup is still being deleted.
        """
        meta = cluster.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        group = await _get(client, PODGROUPS, pod_group_name(name), namespace)
        if group is not None and is_controlled_by(group, cluster):
            await _delete_pod_group(client, group)
            raise RetryLaterError(
                f"waiting for PodGroup {namespace}/{pod_group_name(name)} to finish deleting"
            )
        workload = await _get(client, WORKLOADS, name, namespace)
        if workload is None or not is_controlled_by(workload, cluster):
            return False
        if (workload.get("metadata") or {}).get("deletionTimestamp"):
            raise RetryLaterError(f"Workload {_where(workload)} is being deleted, will retry")
        await _delete(client, WORKLOADS, workload)
        return True

    def add_metadata(
        self, kind: ParentKind, parent: Obj, child: dict[str, Any], group_name: str
    ) -> None:
        """schedulerName ``default-scheduler`` and the pod group, for a gang-scheduled cluster."""
        del group_name
        if kind != RAY_CLUSTER or skip_reason(parent):
            return
        target = child_kind(child)
        set_scheduler_name(child, target, DEFAULT_SCHEDULER)
        if target in ("Pod", "PodTemplate"):
            name = str((parent.get("metadata") or {}).get("name", ""))
            child.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": pod_group_name(name)}

    async def cleanup(self, client: KubeClient, rayjob: Obj) -> bool:
        """Nothing for a RayJob (its cluster's objects follow the cluster)."""
        del client, rayjob
        return False
