"""A root's objects, found and relabelled for the sharder: :class:`RootObjects`.

A root's objects carry the root label (the root's UID) from creation; the sharder finds those of
many roots with a few lists (``<root label> in (...)`` selectors of up to :data:`UIDS_PER_LIST`
UIDs per namespace and resource). A root reconciled before it was ever assigned (an operator
without sharding ran on it: :meth:`RootObjects.needs_adoption`) may have objects with neither
label: they are found by their ownerReferences, directly or through one another (one list per
resource and namespace, of the objects without the root label), and get both labels when the
root's objects are relabelled (:meth:`RootObjects.relabel`). Only the objects' metadata is read
(metadata-only lists: a pod's spec and status never reach the sharder).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, Protocol, Unpack

from rayop.apimachinery.objects import ObjView as Obj
from rayop.kube.errors import NotFound
from rayop.kube.options import ListOptions
from rayop.kube.resource import Resource
from rayop.runtime.sharding.keys import ShardKeys

UIDS_PER_LIST = 100
"""Root UIDs per ``<root label> in (...)`` selector."""

LISTS_IN_FLIGHT = 8
"""Lists of roots' objects sent at once (one per child resource and batch of root UIDs)."""

RELABELS_IN_FLIGHT = 8
"""Patches of one root's objects sent at once (the sharder assigns several roots at once too):
a dead replica's roots are owned again once all their objects are relabelled, so their patches
go out together, bounded by the sharder's token bucket."""


class ObjectsClient(Protocol):
    """The part of the API client :class:`RootObjects` uses."""

    async def list(self, res: Resource, **options: Unpack[ListOptions]) -> dict[str, Any]: ...

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: Any = "merge",
    ) -> dict[str, Any]: ...  # fmt: skip


class RootObjects:
    """Finds and relabels roots' objects in ``children`` (the resources they may live in; one
    the API server does not serve is skipped)."""

    def __init__(self, client: ObjectsClient, keys: ShardKeys, children: Sequence[Resource]) -> None:
        self._client = client
        self.keys = keys
        self._children = tuple(children)

    async def of_roots(
        self, roots: Sequence[Obj]
    ) -> dict[str, list[tuple[Resource, Obj]]]:
        """Returns, per root UID, every object of the root, with its resource: those with the
        root label (a few lists per namespace and resource: ``in`` selectors of up to
        :data:`UIDS_PER_LIST` UIDs, however many roots), and, for a root reconciled before it
        was ever assigned (:meth:`needs_adoption`), the objects without the root label that it
        owns, directly or through another of its objects (ownerReferences)."""
        by_namespace: dict[str, list[str]] = {}
        adopting: dict[str, list[str]] = {}
        for root in roots:
            meta = root.get("metadata") or {}
            if meta.get("uid"):
                namespace = str(meta.get("namespace") or "")
                by_namespace.setdefault(namespace, []).append(str(meta["uid"]))
                if self.needs_adoption(root):
                    adopting.setdefault(namespace, []).append(str(meta["uid"]))
        found: dict[str, list[tuple[Resource, Obj]]] = {}
        limit = asyncio.Semaphore(LISTS_IN_FLIGHT)

        async def one(namespace: str, resource: Resource, uids: Sequence[str]) -> None:
            selector = f"{self.keys.root} in ({','.join(uids)})"
            try:
                async with limit:
                    listed = await self._client.list(
                        resource, namespace=namespace, label_selector=selector, metadata_only=True
                    )
            except NotFound:
                return  # the API server does not serve this resource
            for child in listed.get("items") or ():
                uid = ((child.get("metadata") or {}).get("labels") or {}).get(self.keys.root)
                found.setdefault(str(uid), []).append((resource, child))

        await _all(
            one(namespace, resource, uids[i : i + UIDS_PER_LIST])
            for namespace, uids in by_namespace.items()
            for resource in self._children
            for i in range(0, len(uids), UIDS_PER_LIST)
        )
        for namespace, uids in adopting.items():
            for uid, objects in (await self._unlabelled_objects(namespace, uids)).items():
                found.setdefault(uid, []).extend(objects)
        return found

    def needs_adoption(self, root: Obj) -> bool:
        """Tells whether ``root`` was reconciled (it has a status) but never assigned (no
        ``assigned`` annotation, no ``released`` label): an operator without sharding ran on it,
        and its objects may lack the shard and root labels."""
        meta = root.get("metadata") or {}
        never = not (meta.get("annotations") or {}).get(self.keys.assigned)
        return bool(root.get("status")) and never and not (meta.get("labels") or {}).get(
            self.keys.released
        )

    async def _unlabelled_objects(
        self, namespace: str, uids: Sequence[str]
    ) -> dict[str, list[tuple[Resource, Obj]]]:
        """Returns, per root UID among ``uids``, the objects of ``namespace`` without the root
        label that the root owns, directly or through one another (one list per resource)."""
        owned_by: dict[str, list[tuple[Resource, Obj]]] = {}
        for resource in self._children:
            try:
                listed = await self._client.list(
                    resource, namespace=namespace, label_selector=f"!{self.keys.root}",
                    metadata_only=True,
                )  # fmt: skip
            except NotFound:
                continue
            for obj in listed.get("items") or ():
                for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
                    owned_by.setdefault(str(ref.get("uid")), []).append((resource, obj))
        found: dict[str, list[tuple[Resource, Obj]]] = {}
        for root in uids:
            seen: set[str] = {root}
            frontier = [root]
            while frontier:
                for resource, obj in owned_by.get(frontier.pop(), ()):
                    uid = str((obj.get("metadata") or {}).get("uid"))
                    if uid not in seen:
                        seen.add(uid)
                        frontier.append(uid)
                        found.setdefault(root, []).append((resource, obj))
        return found

    async def relabel(
        self, objects: Sequence[tuple[Resource, Obj]], namespace: str, to: str, root_uid: str
    ) -> dict[str, int]:
        """Labels ``objects`` with ``to`` (and with the root label, those without it), up to
        :data:`RELABELS_IN_FLIGHT` patches at once; returns, per resource, the highest
        resourceVersion written (an object deleted meanwhile is skipped). Blocks until every
        patch has been answered; the first other error is raised then."""
        versions: dict[str, int] = {}
        limit = asyncio.Semaphore(RELABELS_IN_FLIGHT)

        async def one(resource: Resource, child: Obj) -> None:
            cmeta = child.get("metadata") or {}
            clabels = cmeta.get("labels") or {}
            wanted = {self.keys.shard: to}
            if not clabels.get(self.keys.root):
                wanted[self.keys.root] = root_uid  # adopted: it had neither label
            if all(clabels.get(k) == v for k, v in wanted.items()):
                return
            body = {"metadata": {"labels": wanted}}
            try:
                async with limit:
                    written = await self._client.patch(
                        resource, cmeta.get("name", ""), body, namespace=namespace
                    )
            except NotFound:
                return
            rv = str((written.get("metadata") or {}).get("resourceVersion") or "")
            if rv.isdigit():
                versions[str(resource)] = max(versions.get(str(resource), 0), int(rv))

        await _all(one(r, c) for r, c in objects)
        return versions


async def _all(calls: Iterable[Awaitable[None]]) -> None:
    """Awaits every call together; once all have ended, raises the first exception one raised."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
