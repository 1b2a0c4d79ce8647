"""The simulated garbage collector: ownerReferences, propagation policies, namespace deletion.

- Background: once every owner of an object (matched by uid; a namespaced owner must live in
  the dependent's namespace) is gone, the object is deleted; references to owners that are
  gone while others remain are stripped.
- Foreground: an owner deleted with the ``foregroundDeletion`` finalizer has its dependents
  deleted (in the foreground themselves when they have dependents; a dependent another live
  owner holds only loses the reference); the finalizer is removed once no dependent with
  ``blockOwnerDeletion: true`` is left.
- Orphan: an owner with the ``orphan`` finalizer has its references stripped from every
  dependent, then the finalizer is removed.

Namespace deletion (every object in a terminating namespace is deleted, then the namespace) is
done by the store itself; objects deleted that way are garbage-collected like any other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.controller_base import StoreController, iter_resources, meta
from rayop.sim.storage.store import Store

log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


@dataclass(frozen=True, slots=True)
class _Node:
    info: ResourceInfo
    namespace: str
    name: str
    owners: tuple[tuple[str, bool], ...]  # (owner uid, blockOwnerDeletion)


def _owners(obj: Obj) -> tuple[tuple[str, bool], ...]:
    refs = meta(obj).get("ownerReferences") or []
    return tuple(
        (str(r.get("uid")), bool(r.get("blockOwnerDeletion"))) for r in refs if r.get("uid")
    )


class GarbageCollector(StoreController):
    """Deletes dependents of deleted owners and serves the deletion finalizers."""

    name = "gc"

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._nodes: dict[str, _Node] = {}
        self._dependents: dict[str, set[str]] = {}

    # -- graph -------------------------------------------------------------------------------

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = meta(obj)
        uid = str(md.get("uid") or "")
        if not uid:
            return
        previous = self._nodes.get(uid)
        if (
            previous is not None
            and event_type == "MODIFIED"
            and old is not None
            and md.get("ownerReferences") == meta(old).get("ownerReferences")
        ):
            return  # same owners: the graph is unchanged (most writes are status writes)
        if previous is not None:
            for owner, _ in previous.owners:
                deps = self._dependents.get(owner)
                if deps is not None:
                    deps.discard(uid)
        if event_type == "DELETED":
            self._nodes.pop(uid, None)
            return
        node = _Node(info, str(md.get("namespace") or ""), str(md.get("name")), _owners(obj))
        self._nodes[uid] = node
        for owner, _ in node.owners:
            self._dependents.setdefault(owner, set()).add(uid)

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        if event_type == "DELETED" or meta(obj).get("deletionTimestamp"):
            return True
        owners = meta(obj).get("ownerReferences")
        return bool(owners) and (old is None or owners != meta(old).get("ownerReferences"))

    def _owner_alive(self, owner_uid: str, dependent: _Node) -> bool:
        owner = self._nodes.get(owner_uid)
        if owner is None:
            return False
        return not owner.info.namespaced or owner.namespace == dependent.namespace

    # -- StoreController hooks -----------------------------------------------------------------

    async def resync(self) -> None:
        stored: list[tuple[ResourceInfo, Obj]] = []
        seen: set[str] = set()
        for info in iter_resources(self.store):
            if info.key in seen:
                continue
            seen.add(info.key)
            items, _ = self.store.list(info)
            for obj in items:
                self.observe("ADDED", info, obj, None)
                stored.append((info, obj))
        for info, obj in stored:
            await self.handle("ADDED", info, obj, None)

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = meta(obj)
        uid = str(md.get("uid") or "")
        if event_type == "DELETED":
            for dep in sorted(self._dependents.get(uid, ())):
                await self._check_dependent(dep)
            if not self._dependents.get(uid):
                self._dependents.pop(uid, None)
            for owner, _ in _owners(obj):
                await self._recheck_owner(owner)
            return
        if _owners(obj) and (old is None or _owners(old) != _owners(obj)):
            await self._check_dependent(uid)
        if md.get("deletionTimestamp"):
            await self._serve_deletion(info, obj)

    # -- background ----------------------------------------------------------------------------

    async def _check_dependent(self, uid: str) -> None:
        """Deletes a dependent whose owners are all gone, or strips its dangling owners."""
        node = self._nodes.get(uid)
        if node is None or not node.owners:
            return
        dangling = {o for o, _ in node.owners if not self._owner_alive(o, node)}
        if not dangling:
            return
        if len(dangling) == len({o for o, _ in node.owners}):
            await self.delete(
                node.info, node.namespace, node.name, uid=uid, propagation_policy="Background"
            )
            return

        def strip(obj: Obj) -> bool:
            refs = meta(obj).get("ownerReferences") or []
            kept = [r for r in refs if str(r.get("uid")) not in dangling]
            meta(obj)["ownerReferences"] = kept
            return len(kept) != len(refs)

        await self.mutate(node.info, node.namespace, node.name, strip, uid=uid)

    # -- foreground and orphan -----------------------------------------------------------------

    async def _serve_deletion(self, info: ResourceInfo, obj: Obj) -> None:
        md = meta(obj)
        finalizers = md.get("finalizers") or []
        if ORPHAN in finalizers:
            await self._orphan(info, obj)
        elif FOREGROUND in finalizers:
            await self._foreground(info, obj)

    async def _foreground(self, info: ResourceInfo, owner: Obj) -> None:
        """Deletes the owner's dependents, then lets the owner go once none blocks it.

        A dependent that another owner still holds only loses its reference to this owner.
        A dependent with dependents of its own is deleted in the foreground too, so a chain
        of blocking dependents goes bottom-up, as the Kubernetes garbage collector does it.
        """
        md = meta(owner)
        uid = str(md.get("uid"))
        blocking = False
        for dep_uid in sorted(self._dependents.get(uid, ())):
            dep = self._nodes.get(dep_uid)
            if dep is None:
                continue
            if any(self._holds(o, dep) for o, _ in dep.owners if o != uid):
                await self._strip_owner(dep_uid, dep, uid)
                continue
            if any(o == uid and block for o, block in dep.owners):
                blocking = True
            policy = "Foreground" if self._dependents.get(dep_uid) else "Background"
            await self.delete(
                dep.info, dep.namespace, dep.name, uid=dep_uid, propagation_policy=policy
            )
        if not blocking:
            await self._remove_finalizer(info, owner, FOREGROUND)

    def _holds(self, owner_uid: str, dependent: _Node) -> bool:
        """Tells whether an owner exists and is not itself deleting its dependents."""
        if not self._owner_alive(owner_uid, dependent):
            return False
        node = self._nodes[owner_uid]
        obj = self.store.peek(node.info, node.namespace, node.name)
        if obj is None:
            return False
        md = meta(obj)
        return not (md.get("deletionTimestamp") and FOREGROUND in (md.get("finalizers") or ()))

    async def _recheck_owner(self, owner_uid: str) -> None:
        """After a dependent went away: finishes its owner's foreground deletion if unblocked."""
        node = self._nodes.get(owner_uid)
        if node is None:
            return
        owner = await self.get(node.info, node.namespace, node.name)
        if owner is None or not meta(owner).get("deletionTimestamp"):
            return
        if FOREGROUND in (meta(owner).get("finalizers") or []):
            await self._foreground(node.info, owner)

    async def _orphan(self, info: ResourceInfo, owner: Obj) -> None:
        uid = str(meta(owner).get("uid"))
        for dep_uid in sorted(self._dependents.get(uid, ())):
            dep = self._nodes.get(dep_uid)
            if dep is not None:
                await self._strip_owner(dep_uid, dep, uid)
        await self._remove_finalizer(info, owner, ORPHAN)

    async def _strip_owner(self, dep_uid: str, dep: _Node, owner_uid: str) -> None:
        """Removes the references to one owner from a dependent."""

        def strip(obj: Obj) -> bool:
            refs = meta(obj).get("ownerReferences") or []
            kept = [r for r in refs if str(r.get("uid")) != owner_uid]
            meta(obj)["ownerReferences"] = kept
            return len(kept) != len(refs)

        await self.mutate(dep.info, dep.namespace, dep.name, strip, uid=dep_uid)

    async def _remove_finalizer(self, info: ResourceInfo, obj: Obj, finalizer: str) -> None:
        md = meta(obj)

        def drop(o: Obj) -> bool:
            fins = meta(o).get("finalizers") or []
            if finalizer not in fins:
                return False
            meta(o)["finalizers"] = [f for f in fins if f != finalizer]
            return True

        await self.mutate(
            info, str(md.get("namespace") or ""), str(md.get("name")), drop, uid=str(md.get("uid"))
        )
