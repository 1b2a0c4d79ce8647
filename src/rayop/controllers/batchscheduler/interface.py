"""What every batch scheduler integration does (KubeRay's ``BatchScheduler`` interface).

A scheduler is consulted at four points, as in KubeRay v1.7:

- :meth:`BatchScheduler.submit` before a RayCluster's pods are reconciled, and before a RayJob
  in ``Initializing`` gets its cluster: most schedulers create or resize a PodGroup here;
- :meth:`BatchScheduler.add_metadata` on every head and worker pod before it is created, on the
  K8sJobMode submitter Job's pod template, and on the RayCluster a K8sJobMode RayJob creates:
  labels (queue, priority), annotations (group names) and ``schedulerName``;
- :meth:`BatchScheduler.cleanup` when a RayJob is suspended, retried, completes or fails: a
  scheduler holding queue capacity for it releases it.

Objects are wire JSON (plain dicts); ``kind`` says whether a parent is a ``RayCluster`` or a
``RayJob`` (list items carry no ``kind``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from rayop.apimachinery.objects import ObjView as Obj
from rayop.kube.client import KubeClient

__all__ = ["RAY_CLUSTER", "RAY_JOB", "BatchScheduler", "BatchSchedulingError", "ParentKind"]

ParentKind = Literal["RayCluster", "RayJob"]
RAY_CLUSTER: ParentKind = "RayCluster"
RAY_JOB: ParentKind = "RayJob"


class BatchSchedulingError(Exception):
    """A spec the scheduler cannot gang-schedule; the reconcile fails with KubeRay's message."""


class BatchScheduler(Protocol):
    """One batch scheduler integration (stateless: the client comes with each call)."""

    @property
    def name(self) -> str:
        """The plugin name, as ``--batch-scheduler`` takes it."""
        ...

    async def submit(self, client: KubeClient, kind: ParentKind, parent: Obj) -> None:
        """Creates or updates the scheduler's objects for a RayCluster or RayJob; blocks.

        Raises:
            BatchSchedulingError: the scheduler refuses the spec (KubeRay's message).
            ApiError: a call failed (the reconcile is retried).
        """
        ...

    def add_metadata(
        self, kind: ParentKind, parent: Obj, child: dict[str, Any], group_name: str
    ) -> None:
        """Adds the scheduler's labels, annotations and ``schedulerName`` to a child in place.

        Args:
            kind: The parent's kind.
            parent: The RayCluster or RayJob (wire JSON).
            child: A pod, a pod template (both get ``spec.schedulerName``) or a RayCluster.
            group_name: ``headgroup``, a worker group's name, ``submitter``, or ``""`` for a
                RayCluster child.
        """
        ...

    async def cleanup(self, client: KubeClient, rayjob: Obj) -> bool:
        """Releases what a finished or suspended RayJob holds; returns whether it changed
        anything; blocks.

        Raises:
            ApiError: a call failed.
        """
        ...


def labels_of(obj: Obj) -> Mapping[str, str]:
    """Returns an object's labels (empty when it has none)."""
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    """Returns an object's annotations (empty when it has none)."""
    return (obj.get("metadata") or {}).get("annotations") or {}


def set_label(child: dict[str, Any], key: str, value: str) -> None:
    """Sets one label on a child object or pod template."""
    child.setdefault("metadata", {}).setdefault("labels", {})[key] = value


def set_annotation(child: dict[str, Any], key: str, value: str) -> None:
    """Sets one annotation on a child object or pod template."""
    child.setdefault("metadata", {}).setdefault("annotations", {})[key] = value


def set_scheduler_name(child: dict[str, Any], kind: str, scheduler_name: str) -> None:
    """Sets ``spec.schedulerName`` on a pod or pod template; a RayCluster child is left alone.

    Args:
        child: The child object.
        kind: ``"Pod"``, ``"PodTemplate"`` or ``"RayCluster"``.
        scheduler_name: The scheduler's name.
    """
    if kind in ("Pod", "PodTemplate"):
        child.setdefault("spec", {})["schedulerName"] = scheduler_name


def child_kind(child: Obj) -> str:
    """Tells a RayCluster child (``kind: RayCluster``) from a pod or pod template."""
    kind = child.get("kind")
    if kind == "RayCluster":
        return "RayCluster"
    return "Pod" if kind == "Pod" else "PodTemplate"


def controller_owner(kind: ParentKind, parent: Obj) -> dict[str, Any]:
    """Returns the controller ownerReference KubeRay's ``NewControllerRef`` writes."""
    meta = parent.get("metadata") or {}
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_controlled_by(obj: Obj, parent: Obj) -> bool:
    """Tells whether ``obj`` has a controller ownerReference to ``parent``'s uid."""
    uid = (parent.get("metadata") or {}).get("uid")
    return any(
        ref.get("controller") is True and ref.get("uid") == uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or ()
    )
