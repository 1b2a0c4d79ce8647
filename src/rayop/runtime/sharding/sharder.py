"""Assigns root objects to live replicas: :class:`Sharder` (run by the elected leader only).

Each step reads the membership Leases, takes the
:class:`~rayop.runtime.sharding.rendezvous.Rendezvous` hashing of the live replicas (built anew
when they change), and then:

1. lists the roots labelled with a replica that is not alive, then the roots with no shard
   label (new ones, and ones whose owner just acknowledged a drain), and gives each to its hashed
   owner (:meth:`Sharder.assign`). A dead replica is not waited for: its Lease lapsed, and a
   replica stops reconciling before its own Lease can lapse on anyone's clock.
2. when the membership changed, a drain is still pending, or every ``full_every`` steps, lists
   every root: a root whose live owner is not its hashed owner gets the drain label (the owner
   acknowledges by removing it with the shard label, and step 1 then assigns it), and the
   per-replica counts are refreshed, and the member Leases of replicas gone for a while are
   deleted (:meth:`~rayop.runtime.sharding.membership.Membership.forget_gone`).

Because the leader lists by label each step, a root created or released while the leader role
moves is found by the next leader: nothing is remembered between steps but the last membership.

Hand edits: each assignment also writes the ``assigned`` annotation. A root whose shard label
disagrees with it (removed, or set to another replica, live, dead or unknown) while the
assigned replica is alive and acknowledged no drain (the ``released`` label) was edited by hand:
its label goes back to that replica, which holds its objects and may be working on it (a
Warning event ``ShardLabelRestored`` says so; the gate of the replica the label wrongly named
admits nothing, as the annotation does not name it). A label removed or set to a dead or
unknown replica is seen at the next step (the selectors above); one set to another live replica
as soon as that replica's informer shows it (its gate calls :meth:`Sharder.repair`), and at
the next full round at the latest. A root with no label and no annotation whose objects are labelled with
a live replica is given back to that replica too.

Adoption: a root reconciled before it was ever assigned may have objects with neither label;
:class:`~rayop.runtime.sharding.objects.RootObjects` finds them by ownerReferences and labels
them with the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Unpack

from rayop.apimachinery.objects import ObjView as Obj
from rayop.kube.errors import ApiError, Gone, NotFound
from rayop.kube.options import ListOptions
from rayop.kube.resource import Resource
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.events.recorder import EventSink, EventType
from rayop.runtime.sharding.gate import format_handover
from rayop.runtime.sharding.keys import TRUE, ShardKeys, annotation_path, label_path
from rayop.runtime.sharding.membership import Membership
from rayop.runtime.sharding.metrics import ShardMetrics
from rayop.runtime.sharding.objects import RootObjects
from rayop.runtime.sharding.rendezvous import Rendezvous
from rayop.runtime.sharding.slim import slim_root

log = logging.getLogger(__name__)

ASSIGN_CONCURRENCY = 16
"""Roots assigned at once in one step (each one's objects are relabelled in turn)."""

ASSIGN_BATCH = 64
"""Unassigned roots given out between two reads of the membership: when a replica is found gone
meanwhile, the step ends and the next one starts at once, with that replica's roots first (a
burst of new roots would otherwise hold them back for as long as it takes to assign)."""


class SharderClient(Protocol):
    """The part of the API client the sharder uses."""

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def list(self, res: Resource, **options: Unpack[ListOptions]) -> dict[str, Any]: ...

    def list_pages(
        self, res: Resource, **options: Unpack[ListOptions]
    ) -> AsyncIterator[dict[str, Any]]: ...

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: Any = "merge",
    ) -> dict[str, Any]: ...  # fmt: skip


@dataclass(slots=True)
class _Tally:
    """What a full round found in one namespace of one root kind."""

    counts: Counter[str] = field(default_factory=Counter)
    unassigned: int = 0
    unsettled: bool = False
    mislabelled: list[Obj] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RootKind:
    """A resource whose objects may be roots; ``is_root`` tells which (default: all)."""

    resource: Resource
    is_root: Callable[[Obj], bool] = lambda _obj: True
    unreconciled: Callable[[Obj], bool] | None = None
    """Tells a root no pass has run on yet (so it has no objects: none are looked up when it is
    assigned, and with no ``assigned`` annotation, no ``released`` and no shard label it was
    never assigned either); None: every root may have objects."""


def owner_key(obj: Obj) -> str:
    """Returns the key a root is hashed by: ``namespace/name``."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name', '')}"


class Sharder:
    """Assigns and moves roots; see the module docstring.

    Args:
        client: Lists and patches (roots, their objects).
        membership: Reads the live replicas.
        keys: The label and annotation keys.
        roots: The root kinds.
        children: The resources in which a root's objects live (found by the root label).
        namespaces: The namespaces whose roots are assigned; empty: every namespace.
        metrics: Counts, moves.
        events: Where the events about moves and repaired labels go; None: nowhere.
        interval: Seconds between steps.
        full_every: Every this many steps, list every root even when nothing changed.
        clock: Time source.
    """

    def __init__(
        self,
        client: SharderClient,
        membership: Membership,
        keys: ShardKeys,
        roots: Sequence[RootKind],
        children: Sequence[Resource],
        *,
        namespaces: Sequence[str] = (),
        metrics: ShardMetrics | None = None,
        events: EventSink | None = None,
        interval: float = 1.0,
        full_every: int = 30,
        clock: Clock = MONOTONIC,
    ) -> None:
        self._client = client
        self._membership = membership
        self.keys = keys
        self._roots = tuple(roots)
        self.objects = RootObjects(client, keys, children)
        self._namespaces = tuple(namespaces)
        self._metrics = metrics
        self._events = events
        self._interval = interval
        self._full_every = max(1, full_every)
        self._clock = clock
        self._live: frozenset[str] = frozenset()
        self._owners: Rendezvous | None = None
        self._unsettled = True
        self._steps = 0

    async def run(self) -> None:
        """Steps every ``interval`` seconds until cancelled (at once after a step that ended
        because a replica was found gone); a failed step is logged."""
        while True:
            again = False
            try:
                again = await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("sharder step failed")
            if not again:
                await self._clock.sleep(self._interval)

    async def step(self) -> bool:
        """One round: assign the orphaned and unassigned roots, then rebalance if needed.

        Returns True when the round ended early because the live replicas changed while new
        roots were given out (the next round is due at once)."""
        live = await self._membership.live()
        if not live:
            return False
        if self._owners is None or self._owners.members != live:
            self._owners = Rendezvous(live)
        owners = self._owners
        full = live != self._live or self._unsettled or self._steps % self._full_every == 0
        self._live = live
        self._steps += 1
        # The roots of a replica that is gone first: their objects wait unreconciled until owned
        # again, while a new root waits only for its first pass.
        for kind in self._roots:
            found = await self._list(kind.resource, self.keys.orphaned(live))
            await self._assign_all(kind, [o for o in found if kind.is_root(o)], owners)
        for kind in self._roots:
            found = [o for o in await self._list(kind.resource, self.keys.unassigned)
                     if kind.is_root(o)]  # fmt: skip
            for i in range(0, len(found), ASSIGN_BATCH):
                if i and await self._membership.live() != live:
                    return True
                await self._assign_all(kind, found[i : i + ASSIGN_BATCH], owners)
        if full:
            await self._rebalance(owners)
            await self._membership.forget_gone()
        return False

    async def _assign_all(self, kind: RootKind, roots: Sequence[Obj], owners: Rendezvous) -> None:
        """Assigns ``roots`` (or restores their hand-edited labels), several at once, their
        objects looked up together; a root that fails is logged and left for the next step."""
        if not roots:
            return
        objects = await self.objects.of_roots([r for r in roots if self.may_have_objects(kind, r)])
        limit = asyncio.Semaphore(ASSIGN_CONCURRENCY)

        async def one(obj: Obj) -> None:
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            async with limit:
                await self.assign(kind.resource, obj, owners, objects=objects.get(uid, []))

        results = await asyncio.gather(*(one(o) for o in roots), return_exceptions=True)
        for obj, result in zip(roots, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, Exception):
                log.warning("%s not assigned (next step retries): %r", owner_key(obj), result)

    async def _rebalance(self, owners: Rendezvous) -> None:
        """Counts every root per owner and asks for the drain of each the hashing now gives to
        another replica; reads the roots' metadata only, a page at a time (at 30,000 RayClusters
        a whole list held at once, even slim, was some 40 MB in the sharder's replica). A root
        found labelled by hand is read again whole before it is assigned (whether it has a
        status tells whether its objects need adopting)."""
        counts: Counter[str] = Counter()
        unassigned = 0
        unsettled = False
        for kind in self._roots:
            for namespace in self._namespaces or (None,):
                tally = _Tally()
                pages = self._pages(kind.resource, namespace, None, metadata_only=True)
                async for page, restart in pages:
                    if restart:  # the pages so far were a partial list; this one has it all
                        tally = _Tally()
                    for obj in page:
                        if kind.is_root(obj):
                            await self._tally(tally, kind.resource, obj, owners)
                counts += tally.counts
                unassigned += tally.unassigned
                unsettled = unsettled or tally.unsettled
                await self._assign_all(kind, await self._whole(kind, tally.mislabelled), owners)
        self._unsettled = unsettled
        if self._metrics is not None:
            self._metrics.set_counts({m: counts.get(m, 0) for m in owners.members}, unassigned)

    async def _tally(self, tally: _Tally, resource: Resource, obj: Obj, owners: Rendezvous) -> None:
        """Counts one root of a full round; asks for its drain when the hashing moved it."""
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        owner = labels.get(self.keys.shard)
        if owner not in owners.members:
            tally.unassigned += 1
            return
        if (meta.get("annotations") or {}).get(self.keys.assigned) != owner:
            tally.mislabelled.append(obj)  # labelled by hand (or by no sharder): not owned
            tally.unassigned += 1
            tally.unsettled = True
            return
        tally.counts[str(owner)] += 1
        if owner != owners.owner(owner_key(obj)):
            tally.unsettled = True
            if labels.get(self.keys.drain) != TRUE:
                await self._request_drain(resource, obj, str(owner))

    async def _list(self, resource: Resource, selector: str | None) -> list[Obj]:
        """Lists ``resource`` in every namespace the sharder serves (by ``selector``), kept
        slim (:func:`~rayop.runtime.sharding.slim.slim_root`)."""
        found: list[Obj] = []
        for namespace in self._namespaces or (None,):
            listed: list[Obj] = []
            async for page, restart in self._pages(resource, namespace, selector):
                if restart:
                    listed = []
                listed.extend(page)
            found.extend(listed)
        return found

    async def _whole(self, kind: RootKind, roots: Sequence[Obj]) -> list[Obj]:
        """Reads ``roots`` (read as metadata only) again whole, kept slim; one deleted meanwhile
        is left out."""
        whole: list[Obj] = []
        for root in roots:
            meta = root.get("metadata") or {}
            try:
                obj = await self._client.get(
                    kind.resource, str(meta.get("name", "")), namespace=meta.get("namespace")
                )
            except NotFound:
                continue
            whole.append(slim_root(obj, (self.keys.assigned,)))
        return whole

    async def _pages(
        self,
        resource: Resource,
        namespace: str | None,
        selector: str | None,
        *,
        metadata_only: bool = False,
    ) -> AsyncIterator[tuple[list[Obj], bool]]:
        """Yields ``resource`` in ``namespace`` (by ``selector``) a page at a time, each item
        slim, with False; when a continue token expires mid-list, yields the whole list, read
        again unpaged, with True (the pages before it were a partial list). With
        ``metadata_only`` the server sends the items' metadata only (no spec, no status: a slim
        item then never has :data:`~rayop.runtime.sharding.slim.HAS_STATUS`); the items keep
        ``resource``'s apiVersion and kind."""
        notes = (self.keys.assigned,)
        options: ListOptions = {"namespace": namespace}
        if selector is not None:
            options["label_selector"] = selector
        if metadata_only:
            options["metadata_only"] = True
        kind = (resource.api_version, resource.kind) if metadata_only else None
        try:
            async for page in self._client.list_pages(resource, **options):
                yield [slim_root(o, notes, kind) for o in page.get("items") or ()], False
        except Gone:
            unpaged: ListOptions = {**options, "limit": None}
            listed = await self._client.list(resource, **unpaged)
            yield [slim_root(o, notes, kind) for o in listed.get("items") or ()], True

    async def _request_drain(self, resource: Resource, obj: Obj, owner: str) -> None:
        meta = obj.get("metadata") or {}
        ops = [
            {"op": "test", "path": label_path(self.keys.shard), "value": owner},
            {"op": "add", "path": label_path(self.keys.drain), "value": TRUE},
        ]
        try:
            await self._client.patch(
                resource, meta.get("name", ""), ops, namespace=meta.get("namespace"),
                patch_type="json",
            )  # fmt: skip
        except ApiError as exc:
            log.info("drain of %s not requested: %s", owner_key(obj), exc)
            return
        if self._metrics is not None:
            self._metrics.moves.inc()  # the move starts: the root changes hands once acknowledged

    def restore_to(self, obj: Obj, live: frozenset[str]) -> str | None:
        """Returns the replica a root's hand-edited shard label goes back to, or None when the
        root is to be assigned (and its objects relabelled) as usual.

        The ``assigned`` annotation names the replica the sharder last gave the root to. When
        that replica is alive and the label says otherwise (removed, or set to another replica,
        live, dead or unknown) without a drain it acknowledged (``released``), the label was
        edited by hand: that replica holds the root's objects and may be working on it, so the
        label goes back to it (a move, if the hashing wants one, then goes through a drain).
        """
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        assigned = (meta.get("annotations") or {}).get(self.keys.assigned)
        label = labels.get(self.keys.shard)
        if assigned in live and label != assigned and not labels.get(self.keys.released):
            return str(assigned)
        return None

    async def assign(
        self,
        resource: Resource,
        obj: Obj,
        owners: Rendezvous,
        *,
        objects: Sequence[tuple[Resource, Obj]] | None = None,
    ) -> bool:
        """Gives ``obj`` (a root with no live owner) to its hashed owner, its objects first (or
        puts a hand-edited label back, see :meth:`restore_to`); returns whether the root was
        written. ``objects``: the root's objects, when the caller looked them up already."""
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name", ""))
        labels = meta.get("labels") or {}
        restore = self.restore_to(obj, owners.members)
        if restore is not None:
            return await self._restore(resource, obj, restore)
        desired = owners.owner(owner_key(obj))
        if desired is None:
            return False
        if objects is None:
            objects = (await self.objects.of_roots([obj])).get(str(meta.get("uid") or ""), [])
        if not labels.get(self.keys.shard):
            holders = {
                str(((o.get("metadata") or {}).get("labels") or {}).get(self.keys.shard))
                for _, o in objects
            } & owners.members - {labels.get(self.keys.released)}
            if holders:
                desired = sorted(holders)[0]
                log.warning(
                    "%s/%s lost its %s label by hand; given back to %s, which holds its objects",
                    namespace, name, self.keys.shard, desired,
                )  # fmt: skip
        versions = await self.objects.relabel(
            objects, namespace, desired, str(meta.get("uid") or "")
        )
        ops: list[dict[str, Any]] = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": meta.get("resourceVersion"),
            }
        ]
        if not labels:
            ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
        ops.append({"op": "add", "path": label_path(self.keys.shard), "value": desired})
        for stale in (self.keys.drain, self.keys.released):
            if stale in labels:
                ops.append({"op": "remove", "path": label_path(stale)})
        notes = {self.keys.assigned: desired}
        if versions:
            notes[self.keys.handover] = format_handover(versions)
        if meta.get("annotations"):
            for key, value in notes.items():
                ops.append({"op": "add", "path": annotation_path(key), "value": value})
        else:
            ops.append({"op": "add", "path": "/metadata/annotations", "value": notes})
        try:
            await self._client.patch(resource, name, ops, namespace=namespace, patch_type="json")
        except ApiError as exc:
            log.info("%s/%s not assigned (next step retries): %s", namespace, name, exc)
            return False
        previous = (
            labels.get(self.keys.released)
            or (meta.get("annotations") or {}).get(self.keys.assigned)
            or labels.get(self.keys.shard)
        )
        if labels.get(self.keys.shard) and self._metrics is not None:
            self._metrics.moves.inc()  # taken from a replica that is gone
        if previous and previous != desired:
            self._event(resource, obj, "Normal", "ShardMoved",
                        f"moved from replica {previous} to replica {desired}")  # fmt: skip
        log.info("%s/%s assigned to %s", namespace, name, desired)
        return True

    async def repair(self, resource: Resource, obj: Obj) -> bool:
        """Puts back the shard label of ``obj`` (see :meth:`restore_to`) as soon as a replica's
        informer shows it edited by hand to name that replica (the gate calls this in every
        replica, leader or not; a round of the sharder would see it only at its next full
        round); returns whether it wrote. The write tests the resourceVersion, so of this and
        a sharder's round that race, one writes."""
        to = self.restore_to(obj, await self._membership.live())
        if to is None:
            return False
        return await self._restore(resource, obj, to)

    async def _restore(self, resource: Resource, obj: Obj, to: str) -> bool:
        """Puts the shard label of ``obj`` back to ``to`` (the replica it was assigned to)."""
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name", ""))
        label = (meta.get("labels") or {}).get(self.keys.shard)
        ops: list[dict[str, Any]] = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": meta.get("resourceVersion"),
            }
        ]
        if not meta.get("labels"):
            ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
        ops.append({"op": "add", "path": label_path(self.keys.shard), "value": to})
        try:
            await self._client.patch(resource, name, ops, namespace=namespace, patch_type="json")
        except ApiError as exc:
            log.info("%s/%s label not restored (next step retries): %s", namespace, name, exc)
            return False
        was = f"set to {label!r}" if label else "removed"
        note = (
            f"the {self.keys.shard} label was {was} by hand; put back to replica {to}, which "
            "owns this object (to move it, scale the replicas: the sharder drains it first)"
        )
        log.warning("%s/%s: %s", namespace, name, note)
        self._event(resource, obj, "Warning", "ShardLabelRestored", note)
        return True

    def _event(self, resource: Resource, obj: Obj, kind: EventType, reason: str, note: str) -> None:
        if self._events is not None:
            regarding = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
            self._events.event(regarding, kind, reason, note)

    def may_have_objects(self, kind: RootKind, root: Obj) -> bool:
        """Tells whether ``root`` may have objects to relabel: not when it was never assigned
        and no pass ran on it (``kind.unreconciled``), as objects are made only in passes; such
        a root (a new one) costs no lookup."""
        if kind.unreconciled is None or not kind.unreconciled(root):
            return True
        meta = root.get("metadata") or {}
        labels = meta.get("labels") or {}
        return bool(
            (meta.get("annotations") or {}).get(self.keys.assigned)
            or labels.get(self.keys.released)
            or labels.get(self.keys.shard)
        )
