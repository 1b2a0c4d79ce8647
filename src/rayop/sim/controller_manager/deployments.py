"""The simulated Deployment controller (apps/v1): Deployment -> ReplicaSets -> pods.

The ReplicaSet of the current template is ``<deployment>-<pod-template-hash>``, its template
and selector carrying the ``pod-template-hash`` label (a 32-bit FNV-1a hash of the template,
spelt in the alphabet Kubernetes uses for generated names: ComputeHash in
https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/controller_utils.go and
SafeEncodeString in https://github.com/kubernetes/apimachinery/blob/master/pkg/util/rand/rand.go;
the value differs from kube-controller-manager's, which hashes Go's printout of the template).
A template change creates a new ReplicaSet and moves the replicas over:

- ``RollingUpdate`` (default; ``maxSurge``/``maxUnavailable`` 25 %, rounded up and down): the
  new ReplicaSet grows while all pods stay within ``replicas + maxSurge``; old ones shrink,
  oldest first, as long as ``replicas - maxUnavailable`` pods stay available.
- ``Recreate``: the old ReplicaSets go to 0; the new one grows once their pods are gone.

Old ReplicaSets at 0 beyond ``revisionHistoryLimit`` (10) are deleted. The status has
``replicas``, ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``,
``unavailableReplicas``, ``observedGeneration`` and the ``Available`` and ``Progressing``
conditions. ``paused`` and ``progressDeadlineSeconds`` are not acted on.
"""

from __future__ import annotations

import copy
import math

import orjson

from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.owned_controller import OwnedController, owner_reference
from rayop.sim.machinery.timestamps import now_rfc3339
from rayop.sim.storage.controller_base import meta

__all__ = ["DeploymentController", "pod_template_hash"]

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def pod_template_hash(template: Obj, collisions: int = 0) -> str:
    """Returns the ``pod-template-hash`` label value of a pod template."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS) + str(collisions).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(value))


def _without_hash(template: Obj) -> Obj:
    out = copy.deepcopy(template)
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return out


def _scaled(value: object, total: int, *, round_up: bool) -> int:
    """Resolves an int-or-percent (``"25%"``) against ``total``."""
    if isinstance(value, str) and value.endswith("%"):
        exact = total * int(value[:-1]) / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(str(value))


def _count(rs: Obj, field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0)


def _spec_replicas(rs: Obj) -> int:
    return int((rs.get("spec") or {}).get("replicas") or 0)


def _revision(rs: Obj) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION) or 0)
    except ValueError:
        return 0


class DeploymentController(OwnedController):
    """Runs apps/v1 Deployments through ReplicaSets (see the module docstring)."""

    name = "deployments"
    owner = ("apps", "v1", "deployments", "Deployment")
    child = ("apps", "v1", "replicasets")

    async def sync(self, owner: Obj, children: list[Obj]) -> None:
        spec = owner.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        template = spec.get("template") or {}
        live = [rs for rs in children if not meta(rs).get("deletionTimestamp")]
        new = next((rs for rs in live if _without_hash(rs["spec"]["template"]) == template), None)
        old = sorted((rs for rs in live if rs is not new), key=_revision)
        if new is None:
            new = await self._create_replica_set(owner, old)
            if new is None:
                return
        strategy = spec.get("strategy") or {}
        if strategy.get("type") == "Recreate":
            surge, unavailable = 0, replicas
            for rs in old:
                await self._scale(rs, 0)
            if not any(_count(rs, "replicas") for rs in old):
                await self._scale(new, replicas)
        else:
            rolling = strategy.get("rollingUpdate") or {}
            surge = _scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True)
            unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
            if surge == 0 and unavailable == 0:
                unavailable = 1
            await self._roll(new, old, replicas, surge, unavailable)
        await self._clean_up(old, int(spec.get("revisionHistoryLimit", 10)))
        await self._write(owner, new, [new, *old], replicas, unavailable)

    async def _roll(
        self, new: Obj, old: list[Obj], replicas: int, surge: int, unavailable: int
    ) -> None:
        old_total = sum(_spec_replicas(rs) for rs in old)
        current = _spec_replicas(new)
        if old_total == 0:
            target = replicas
        else:
            room = replicas + surge - (current + old_total)
            target = min(replicas, current + max(0, room)) if current < replicas else replicas
        await self._scale(new, target)
        pods = sum(_count(rs, "replicas") for rs in [new, *old])
        new_unavailable = max(0, target - _count(new, "availableReplicas"))
        budget = pods - (replicas - unavailable) - new_unavailable
        for rs in old:  # oldest first
            if budget <= 0:
                break
            cut = min(budget, _spec_replicas(rs))
            if cut:
                await self._scale(rs, _spec_replicas(rs) - cut)
                budget -= cut

    async def _scale(self, rs: Obj, replicas: int) -> None:
        assert self.child_info is not None
        if _spec_replicas(rs) == replicas:
            return

        def change(obj: Obj) -> bool:
            if (obj.get("spec") or {}).get("replicas") == replicas:
                return False
            obj.setdefault("spec", {})["replicas"] = replicas
            return True

        md = meta(rs)
        await self.mutate(
            self.child_info, str(md.get("namespace")), str(md["name"]), change, uid=str(md["uid"])
        )

    async def _create_replica_set(self, owner: Obj, old: list[Obj]) -> Obj | None:
        md = meta(owner)
        spec = owner.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        value = pod_template_hash(
            template, int((owner.get("status") or {}).get("collisionCount") or 0)
        )
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: value}
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: value}
        revision = max((_revision(rs) for rs in old), default=0) + 1
        replicas = int(spec.get("replicas", 1))
        rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{md['name']}-{value}",
                "namespace": md.get("namespace"),
                "labels": dict(tmeta["labels"]),
                "annotations": {
                    REVISION: str(revision),
                    "deployment.kubernetes.io/desired-replicas": str(replicas),
                },
                "ownerReferences": [owner_reference(owner, "apps/v1", "Deployment")],
            },
            "spec": {
                "replicas": 0 if old else replicas,
                "selector": selector,
                "template": template,
            },
        }
        if spec.get("minReadySeconds"):
            rs["spec"]["minReadySeconds"] = int(spec["minReadySeconds"])
        return await self.create_child(str(md.get("namespace")), rs)

    async def _clean_up(self, old: list[Obj], limit: int) -> None:
        assert self.child_info is not None
        idle = [rs for rs in old if not _spec_replicas(rs) and not _count(rs, "replicas")]
        for rs in idle[: max(0, len(idle) - limit)]:
            md = meta(rs)
            await self.delete(
                self.child_info, str(md.get("namespace")), str(md["name"]), uid=str(md["uid"])
            )

    async def _write(
        self, owner: Obj, new: Obj, sets: list[Obj], replicas: int, unavailable: int
    ) -> None:
        total = sum(_spec_replicas(rs) for rs in sets)
        available = sum(_count(rs, "availableReplicas") for rs in sets)
        updated = _count(new, "replicas")
        now = now_rfc3339()
        old_conditions = {
            c.get("type"): c for c in (owner.get("status") or {}).get("conditions") or []
        }
        name = meta(new)["name"]
        done = updated == replicas and total == replicas and available >= replicas
        conditions = [
            _condition(
                old_conditions,
                "Available",
                available >= replicas - unavailable,
                ("MinimumReplicasAvailable", "Deployment has minimum availability.")
                if available >= replicas - unavailable
                else (
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                ),
                now,
            ),
            _condition(
                old_conditions,
                "Progressing",
                True,
                ("NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully progressed.')
                if done
                else ("ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.'),
                now,
            ),
        ]
        await self.write_status(
            owner,
            {
                "observedGeneration": meta(owner).get("generation", 1),
                "replicas": sum(_count(rs, "replicas") for rs in sets) or None,
                "updatedReplicas": updated or None,
                "readyReplicas": sum(_count(rs, "readyReplicas") for rs in sets) or None,
                "availableReplicas": available or None,
                "unavailableReplicas": max(0, total - available) or None,
                "conditions": conditions,
            },
        )


def _condition(
    old: dict[object, Obj], ctype: str, status: bool, why: tuple[str, str], now: str
) -> Obj:
    """A Deployment condition; its times stay as they were while nothing about it changes."""
    text = "True" if status else "False"
    before = old.get(ctype) or {}
    same = before.get("status") == text and before.get("reason") == why[0]
    return {
        "type": ctype,
        "status": text,
        "lastUpdateTime": before.get("lastUpdateTime", now) if same else now,
        "lastTransitionTime": before.get("lastTransitionTime", now)
        if before.get("status") == text
        else now,
        "reason": why[0],
        "message": why[1],
    }
