"""What the workload controllers (ReplicaSet, Deployment, StatefulSet) share: an index of the
objects each owner controls, the owner's key by uid, and one ``sync`` per owner event.

A subclass names its owner resource (:attr:`OwnedController.owner`) and its child resource
(:attr:`OwnedController.child`); every change of an owner, and every change of a child that
matters (:meth:`OwnedController.child_changed`), syncs that owner.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.controller_base import StoreController, error_code, meta
from rayop.sim.storage.store import Store

__all__ = ["OwnedController", "controller_uid", "owner_reference", "pod_active"]

_TERMINAL = ("Succeeded", "Failed")


def controller_uid(obj: Obj, kind: str) -> str | None:
    """Returns the uid of ``obj``'s controller of ``kind``, or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("kind") == kind and ref.get("controller"):
            return str(ref.get("uid"))
    return None


def owner_reference(owner: Obj, api_version: str, kind: str) -> Obj:
    """Returns the controller ownerReference a controller puts on what it creates."""
    md = meta(owner)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": md["name"],
        "uid": md["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_active(pod: Obj) -> bool:
    """Whether a pod counts toward its owner's replicas (not ended, not being deleted)."""
    return (pod.get("status") or {}).get("phase") not in _TERMINAL and not meta(pod).get(
        "deletionTimestamp"
    )


class OwnedController(StoreController):
    """Indexes the children of each owner and syncs the owner on what changes (see module)."""

    owner: ClassVar[tuple[str, str, str, str]]
    """``(group, version, plural, kind)`` of the owner resource."""
    child: ClassVar[tuple[str, str, str]]
    """``(group, version, plural)`` of the child resource."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.children: dict[str, dict[str, Obj]] = {}
        self._keys: dict[str, tuple[str, str]] = {}
        self.owners: ResourceInfo | None = None
        self.child_info: ResourceInfo | None = None

    def wants(self, info: ResourceInfo) -> bool:
        return (info.group, info.plural) in ((self.owner[0], self.owner[2]), self.child[::2])

    def _is_owner(self, info: ResourceInfo) -> bool:
        return (info.group, info.plural) == (self.owner[0], self.owner[2])

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = meta(obj)
        if not self._is_owner(info):
            uid = controller_uid(obj, self.owner[3])
            if uid is None:
                return
            children = self.children.setdefault(uid, {})
            if event_type == "DELETED":
                children.pop(str(md.get("name")), None)
            else:
                children[str(md.get("name"))] = obj
        elif event_type == "DELETED":
            self._keys.pop(str(md.get("uid")), None)
            self.children.pop(str(md.get("uid")), None)
        else:
            self._keys[str(md.get("uid"))] = (str(md.get("namespace")), str(md.get("name")))

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        if self._is_owner(info):
            return event_type != "DELETED"
        if controller_uid(obj, self.owner[3]) is None:
            return False
        return old is None or event_type == "DELETED" or self.child_changed(obj, old)

    def child_changed(self, obj: Obj, old: Obj) -> bool:
        """Whether a child's update matters to its owner: its status, deletion or replicas."""
        return (
            obj.get("status") != old.get("status")
            or meta(obj).get("deletionTimestamp") != meta(old).get("deletionTimestamp")
            or (obj.get("spec") or {}).get("replicas") != (old.get("spec") or {}).get("replicas")
        )

    async def resync(self) -> None:
        group, version, plural, _ = self.owner
        self.owners = self.resource(group, version, plural)
        self.child_info = self.resource(*self.child)
        if self.owners is None or self.child_info is None:
            return
        children, _ = self.store.list(self.child_info)
        for obj in children:
            self.observe("ADDED", self.child_info, obj, None)
        owners, _ = self.store.list(self.owners)
        for obj in owners:
            self.observe("ADDED", self.owners, obj, None)
        for obj in owners:
            await self.sync_owner(str(meta(obj).get("namespace")), str(meta(obj).get("name")))

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if self._is_owner(info):
            self.owners = info
            await self.sync_owner(str(meta(obj).get("namespace")), str(meta(obj).get("name")))
            return
        self.child_info = info
        key = self._keys.get(controller_uid(obj, self.owner[3]) or "")
        if key is not None:
            await self.sync_owner(*key)

    async def sync_owner(self, namespace: str, name: str) -> None:
        """Reads the owner and calls :meth:`sync` unless it is gone or being deleted."""
        if self.owners is None or self.child_info is None:
            return
        obj = await self.get(self.owners, namespace, name)
        if obj is None or meta(obj).get("deletionTimestamp"):
            return
        await self.sync(obj, list(self.children.get(str(meta(obj)["uid"]), {}).values()))

    async def sync(self, owner: Obj, children: list[Obj]) -> None:
        """Brings one owner's children and status up to date."""
        raise NotImplementedError

    async def create_child(self, namespace: str, obj: Obj) -> Obj | None:
        """Creates a child (None when refused: quota, conflict, namespace going) and indexes it."""
        assert self.child_info is not None
        try:
            created: Any = await self.store.create(self.child_info, namespace, copy.deepcopy(obj))
        except Exception as exc:
            if error_code(exc) in (403, 404, 409, 422):
                return None
            raise
        if isinstance(created, dict):
            self.observe("ADDED", self.child_info, created, None)
            return created
        return None

    async def write_status(self, owner: Obj, status: Obj) -> None:
        """Writes the owner's status fields in ``status`` (unchanged: no write)."""
        assert self.owners is not None
        md = meta(owner)

        def change(obj: Obj) -> bool:
            st: Obj = obj.setdefault("status", {})
            before = copy.deepcopy(st)
            for key, value in status.items():
                if value is None:
                    st.pop(key, None)
                else:
                    st[key] = value
            return st != before

        await self.mutate(
            self.owners,
            str(md.get("namespace")),
            str(md["name"]),
            change,
            subresource="status",
            uid=str(md["uid"]),
        )
