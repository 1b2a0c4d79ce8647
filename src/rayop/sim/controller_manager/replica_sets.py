"""The simulated ReplicaSet controller (apps/v1): keeps ``spec.replicas`` pods of the template.

Missing pods are created from the template (``generateName: <replicaset>-``, the template's
labels, owned by the ReplicaSet); a surplus is deleted, pods not yet ready (then the newest)
first, as kube-controller-manager ranks them. Pods that ended (Succeeded or Failed) are deleted
and replaced. The status counts ``replicas`` (active pods), ``fullyLabeledReplicas``,
``readyReplicas`` and ``availableReplicas`` (ready for ``minReadySeconds``; the plane counts a
ready pod as available at once), with ``observedGeneration``.
"""

from __future__ import annotations

import copy

from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.owned_controller import (
    OwnedController,
    owner_reference,
    pod_active,
)
from rayop.sim.nodes.pod_status import condition_true
from rayop.sim.storage.controller_base import meta

__all__ = ["ReplicaSetController", "pod_from_template"]


def pod_from_template(owner: Obj, api_version: str, kind: str, template: Obj) -> Obj:
    """Returns a pod of ``template`` owned by ``owner`` (name and extra labels left to the caller)."""
    tmeta = template.get("metadata") or {}
    pod_meta: Obj = {
        "namespace": meta(owner).get("namespace"),
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [owner_reference(owner, api_version, kind)],
    }
    if tmeta.get("annotations"):
        pod_meta["annotations"] = dict(tmeta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def _delete_rank(pod: Obj) -> tuple[int, str]:
    """Sorts the pods to delete first to the front: not ready, then the newest."""
    created = str(meta(pod).get("creationTimestamp") or "")
    return (1 if condition_true(pod, "Ready") else 0, "".join(chr(255 - ord(c)) for c in created))


class ReplicaSetController(OwnedController):
    """Runs apps/v1 ReplicaSets (see the module docstring)."""

    name = "replicasets"
    owner = ("apps", "v1", "replicasets", "ReplicaSet")
    child = ("", "v1", "pods")

    async def sync(self, owner: Obj, children: list[Obj]) -> None:
        assert self.child_info is not None
        md = meta(owner)
        namespace = str(md.get("namespace"))
        spec = owner.get("spec") or {}
        want = int(spec.get("replicas", 1))
        for pod in children:
            if not pod_active(pod) and not meta(pod).get("deletionTimestamp"):
                await self.delete(self.child_info, namespace, str(meta(pod)["name"]))
        active = [p for p in children if pod_active(p)]
        if len(active) < want:
            template = spec.get("template") or {}
            for _ in range(want - len(active)):
                pod = pod_from_template(owner, "apps/v1", "ReplicaSet", template)
                pod["metadata"]["generateName"] = f"{md['name']}-"
                created = await self.create_child(namespace, pod)
                if created is None:
                    break
                active.append(created)
        elif len(active) > want:
            for pod in sorted(active, key=_delete_rank)[: len(active) - want]:
                await self.delete(self.child_info, namespace, str(meta(pod)["name"]))
                active.remove(pod)
        selector = ((spec.get("selector") or {}).get("matchLabels") or {}).items()
        labelled = sum(1 for p in active if selector <= (meta(p).get("labels") or {}).items())
        ready = sum(1 for p in active if condition_true(p, "Ready"))
        await self.write_status(
            owner,
            {
                "replicas": len(active),
                # Go's omitempty: a zero count is left out
                "fullyLabeledReplicas": labelled or None,
                "readyReplicas": ready or None,
                "availableReplicas": ready or None,
                "observedGeneration": md.get("generation", 1),
            },
        )
