"""The simulated StatefulSet controller (apps/v1): pods ``<name>-<ordinal>`` with their claims.

Each pod gets, before it is created, a PersistentVolumeClaim ``<template>-<name>-<ordinal>``
per ``volumeClaimTemplates`` entry (kept when the pod or the StatefulSet goes: the default
``Retain`` policy), mounted as the volume of the template's name. Pods carry the labels
``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
``controller-revision-hash`` (``<name>-<hash of the template>``), ``hostname`` and ``subdomain``
(``serviceName``). With ``podManagementPolicy: OrderedReady`` (default) ordinal i is created
only once 0..i-1 are Running and Ready, and scale-down deletes the highest ordinal first, one at
a time; ``Parallel`` creates and deletes all at once. A pod that ended (Failed or Succeeded) is
deleted and created again. ``RollingUpdate`` (default) replaces pods of an older revision from
the highest ordinal down, one at a time, once every pod is ready; ``OnDelete`` leaves them.
The status counts ``replicas``, ``readyReplicas``, ``availableReplicas``, ``currentReplicas``,
``updatedReplicas`` with ``currentRevision``/``updateRevision`` and ``observedGeneration``.
No ControllerRevision objects are written (the plane does not serve them). See
https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/.
"""

from __future__ import annotations

import copy
import re

from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.deployments import pod_template_hash
from rayop.sim.controller_manager.owned_controller import OwnedController, owner_reference
from rayop.sim.controller_manager.replica_sets import pod_from_template
from rayop.sim.nodes.pod_status import condition_true
from rayop.sim.storage.controller_base import error_code, meta

__all__ = ["StatefulSetController"]

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _ordinal(name: str, pod: Obj) -> int | None:
    match = re.fullmatch(re.escape(name) + r"-(\d+)", str(meta(pod).get("name")))
    return int(match.group(1)) if match else None


def _running_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and condition_true(pod, "Ready")


class StatefulSetController(OwnedController):
    """Runs apps/v1 StatefulSets (see the module docstring)."""

    name = "statefulsets"
    owner = ("apps", "v1", "statefulsets", "StatefulSet")
    child = ("", "v1", "pods")

    async def sync(self, owner: Obj, children: list[Obj]) -> None:
        assert self.child_info is not None
        md = meta(owner)
        name, namespace = str(md["name"]), str(md.get("namespace"))
        spec = owner.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        parallel = spec.get("podManagementPolicy") == "Parallel"
        revision = f"{name}-{pod_template_hash(spec.get('template') or {})}"
        pods: dict[int, Obj] = {}
        for pod in children:
            ordinal = _ordinal(name, pod)
            if ordinal is not None:
                pods[ordinal] = pod
        for ended in pods.values():
            if meta(ended).get("deletionTimestamp"):
                continue
            if (ended.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                await self.delete(self.child_info, namespace, str(meta(ended)["name"]))
        blocked = False
        for ordinal in range(replicas):
            existing = pods.get(ordinal)
            if existing is None:
                if blocked:
                    break
                existing = await self._create_pod(owner, ordinal, revision)
                if existing is None:
                    break
                pods[ordinal] = existing
            if not parallel and not _running_ready(existing):
                blocked = True
        extra = sorted((o for o in pods if o >= replicas), reverse=True)
        ready_below = all(_running_ready(pods[o]) for o in pods if o < replicas)
        for ordinal in extra:
            pod = pods[ordinal]
            if not meta(pod).get("deletionTimestamp") and (parallel or ready_below):
                await self.delete(self.child_info, namespace, str(meta(pod)["name"]))
            if not parallel:
                break
        strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
        kept = [pods[o] for o in sorted(pods) if o < replicas]
        if strategy == "RollingUpdate" and len(kept) == replicas and all(map(_running_ready, kept)):
            for pod in reversed(kept):
                if (meta(pod).get("labels") or {}).get(REVISION_LABEL) != revision:
                    await self.delete(self.child_info, namespace, str(meta(pod)["name"]))
                    break
        await self._write(owner, list(pods.values()), revision)

    async def _create_pod(self, owner: Obj, ordinal: int, revision: str) -> Obj | None:
        md = meta(owner)
        name, namespace = str(md["name"]), str(md.get("namespace"))
        spec = owner.get("spec") or {}
        pod_name = f"{name}-{ordinal}"
        pod = pod_from_template(owner, "apps/v1", "StatefulSet", spec.get("template") or {})
        pod["metadata"]["name"] = pod_name
        pod["metadata"]["labels"].update(
            {REVISION_LABEL: revision, POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(ordinal)}
        )
        pod_spec = pod["spec"]
        pod_spec["hostname"] = pod_name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        volumes = [v for v in pod_spec.get("volumes") or []]
        for template in spec.get("volumeClaimTemplates") or []:
            claim = f"{(template.get('metadata') or {}).get('name')}-{pod_name}"
            if not await self._ensure_claim(owner, template, claim):
                return None
            volumes = [v for v in volumes if v.get("name") != template["metadata"]["name"]]
            volumes.append(
                {
                    "name": template["metadata"]["name"],
                    "persistentVolumeClaim": {"claimName": claim},
                }
            )
        if volumes:
            pod_spec["volumes"] = volumes
        return await self.create_child(namespace, pod)

    async def _ensure_claim(self, owner: Obj, template: Obj, claim: str) -> bool:
        """Creates the claim unless it exists; False when it cannot be made."""
        namespace = str(meta(owner).get("namespace"))
        claims = self.resource("", "v1", "persistentvolumeclaims")
        if claims is None:
            return False
        if self.store.peek(claims, namespace, claim) is not None:
            return True
        selector = ((owner.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        tmeta = template.get("metadata") or {}
        obj: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": claim,
                "namespace": namespace,
                "labels": {**(tmeta.get("labels") or {}), **selector},
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        if tmeta.get("annotations"):
            obj["metadata"]["annotations"] = dict(tmeta["annotations"])
        retention = (owner.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if retention.get("whenDeleted") == "Delete":
            obj["metadata"]["ownerReferences"] = [
                {**owner_reference(owner, "apps/v1", "StatefulSet"), "controller": False}
            ]
        try:
            await self.store.create(claims, namespace, obj)
        except Exception as exc:
            return error_code(exc) == 409
        return True

    async def _write(self, owner: Obj, pods: list[Obj], revision: str) -> None:
        live = [p for p in pods if not meta(p).get("deletionTimestamp")]
        ready = sum(1 for p in live if _running_ready(p))
        updated = sum(
            1 for p in live if (meta(p).get("labels") or {}).get(REVISION_LABEL) == revision
        )
        revisions = {(meta(p).get("labels") or {}).get(REVISION_LABEL) for p in live}
        current = (
            revision
            if revisions <= {revision}
            else (owner.get("status") or {}).get("currentRevision", revision)
        )
        current_count = sum(
            1 for p in live if (meta(p).get("labels") or {}).get(REVISION_LABEL) == current
        )
        await self.write_status(
            owner,
            {
                "observedGeneration": meta(owner).get("generation", 1),
                "replicas": len(live),
                "readyReplicas": ready or None,
                "availableReplicas": ready,
                "currentReplicas": current_count or None,
                "updatedReplicas": updated or None,
                "currentRevision": current,
                "updateRevision": revision,
                "collisionCount": 0,
            },
        )
