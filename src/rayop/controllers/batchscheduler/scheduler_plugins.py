"""Kubernetes scheduler-plugins coscheduling (``--batch-scheduler=scheduler-plugins``).

As KubeRay v1.7 does it, for a RayCluster labelled ``ray.io/gang-scheduling-enabled`` (any
value) the operator creates a ``scheduling.x-k8s.io/v1alpha1`` PodGroup named as the cluster,
owned by it (a plain ownerReference, not a controller one), with ``minMember`` the head plus the
desired workers and ``minResources`` their resources; it is created once and never resized.
Every pod gets ``schedulerName: scheduler-plugins-scheduler`` and, with gang scheduling, the
label ``scheduling.x-k8s.io/pod-group``. A RayJob is not supported: its submission fails with
KubeRay's message. A PodGroup of that name that exists already is left as it is.
"""

from __future__ import annotations

from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import resource_list_json
from rayop.controllers.batchscheduler import gang_size
from rayop.controllers.batchscheduler.interface import (
    RAY_CLUSTER,
    BatchSchedulingError,
    ParentKind,
    child_kind,
    labels_of,
    set_label,
    set_scheduler_name,
)
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resource import Resource

__all__ = ["PLUGIN_NAME", "PODGROUPS", "SCHEDULER_NAME", "SchedulerPluginsScheduler"]

PLUGIN_NAME = "scheduler-plugins"
SCHEDULER_NAME = "scheduler-plugins-scheduler"
PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
GANG_SCHEDULING_LABEL = "ray.io/gang-scheduling-enabled"


def build_pod_group(cluster: Obj) -> dict[str, Any]:
    """Returns the PodGroup KubeRay creates for a RayCluster (wire JSON)."""
    meta = cluster.get("metadata") or {}
    spec = cluster.get("spec") or {}
    owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
    pod_group_spec: dict[str, Any] = {}
    members = gang_size.desired_replicas(spec) + 1
    pod_group_spec["minMember"] = members
    pod_group_spec["minResources"] = resource_list_json(gang_size.desired_resources(spec))
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": {
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "ownerReferences": [owner],
        },
        "spec": pod_group_spec,
    }


class SchedulerPluginsScheduler:
    """KubeRay's ``KubeScheduler`` (scheduler-plugins)."""

    name = PLUGIN_NAME

    async def submit(self, client: KubeClient, kind: ParentKind, parent: Obj) -> None:
        """Creates the gang-scheduled RayCluster's PodGroup once.

        Raises:
            BatchSchedulingError: the parent is a RayJob (KubeRay supports only RayClusters).
        """
        if kind != RAY_CLUSTER:
            raise BatchSchedulingError("currently only RayCluster is supported, got *v1.RayJob")
        if GANG_SCHEDULING_LABEL not in labels_of(parent):
            return
        meta = parent.get("metadata") or {}
        name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
        try:
            await client.get(PODGROUPS, name, namespace=namespace)
            return
        except NotFound:
            pass
        try:
            await client.create(PODGROUPS, build_pod_group(parent), namespace=namespace)
        except AlreadyExists:
            return

    def add_metadata(
        self, kind: ParentKind, parent: Obj, child: dict[str, Any], group_name: str
    ) -> None:
        """The pod-group label (gang scheduling only) and schedulerName."""
        del kind, group_name
        if GANG_SCHEDULING_LABEL in labels_of(parent):
            set_label(child, POD_GROUP_LABEL, str((parent.get("metadata") or {}).get("name")))
        set_scheduler_name(child, child_kind(child), SCHEDULER_NAME)

    async def cleanup(self, client: KubeClient, rayjob: Obj) -> bool:
        """Nothing to release."""
        del client, rayjob
        return False
