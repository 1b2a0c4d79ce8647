"""Which passes a replica may run, and how it lets a root go: :class:`ShardGate`.

Every controller's reconcile function is wrapped (:meth:`ShardGate.wrap`). A pass is
*admitted* only when the root of its object (found by the operator's resolver) is in this
replica's cache, labelled with this replica and assigned to it by the sharder (the
``assigned`` annotation: a label edited by hand to name this replica admits nothing), not asked
to drain and not being released here,
and when this replica's caches have seen every write the ``handover`` annotation of the root
names (the sharder relabels a root's objects before the root itself and notes, per resource,
the last resourceVersion it wrote: until the new owner's caches have caught up with that, its
caches could lack an object of the root and a pass could create a duplicate; so the pass is put
off). Resource versions are compared as integers, as Kubernetes now documents them
(https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/5504-comparable-resource-version).

A pass whose object is not in the cache runs as usual (the controller's "it was deleted"
path), unless its key was released here: then nothing of it is ours any more and it is
skipped. A pass whose root is not (yet) ours is skipped and parked; it is enqueued again when
its root is first admitted.

Releasing (the drain handshake): when the root's informer shows a root of this replica with the
drain label, :meth:`ShardGate.release` marks the root as being released (no new pass of its
tree is admitted), waits for the passes in flight on its keys to end (the work queue runs one
pass per key at a time, so these are all), calls each controller's ``forget`` for those keys
(expectations, own-write records), and then removes the drain and shard labels from the root
in one JSON patch that first tests the shard label is still this replica's, and labels it
``released`` by this replica (so that the sharder tells an acknowledged root from one whose
shard label was removed by hand). That removal is
the acknowledgement; only then does the sharder give the root to another replica.

Every admitted pass is timed into the :class:`~rayop.runtime.sharding.pass_record.PassRecord`
when one is given. Objects this replica creates during an admitted pass get the shard and root
labels (:meth:`ShardGate.stamp`), so they follow their root from creation.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rayop.apimachinery.objects import ObjView as Obj
from rayop.kube.errors import ApiError, Invalid, NotFound
from rayop.kube.resource import Resource
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.informers.shared_informer import EventHandlerFuncs
from rayop.runtime.reconcile import ReconcileFunc, Request, Result
from rayop.runtime.sharding.keys import TRUE, ShardKeys, annotation_path, label_path
from rayop.runtime.sharding.metrics import ShardMetrics
from rayop.runtime.sharding.pass_record import Pass, PassRecord
from rayop.runtime.supervisor import TaskSupervisor

log = logging.getLogger(__name__)

CATCH_UP_RETRY = 0.2
"""Seconds after which a pass put off for a cache to catch up is tried again."""

ACK_RETRY = 1.0
"""Seconds between two attempts to acknowledge a drain."""


@dataclass(frozen=True, slots=True)
class Root:
    """The root of a pass's object: its identity and its cached state (None: not cached)."""

    resource: Resource
    namespace: str
    name: str
    obj: Obj | None

    @property
    def key(self) -> str:
        """``resource/namespace/name``: the root's identity in the gate."""
        return f"{self.resource}/{self.namespace}/{self.name}"


Resolver = Callable[[Request], Root | None]
"""Finds the root of a controller's request; None when the request's object is not cached."""

CaughtUp = Callable[[str, str, int], bool]
"""``(namespace, resource, resource_version)``: have this replica's caches of that resource
delivered that version?"""

Forget = Callable[[Request], Awaitable[None] | None]
"""Drops what a controller remembers of one object (expectations, own-write records); what it
returns, when awaitable, is awaited before the drain is acknowledged (background work of the
object being stopped)."""

Repair = Callable[[Resource, Obj], Awaitable[object]]
"""Puts back the shard label of a root edited by hand (the sharder's :meth:`repair`)."""


class PatchClient(Protocol):
    """The part of the API client the gate uses."""

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: Any = "merge",
    ) -> dict[str, Any]: ...  # fmt: skip


_current_root: contextvars.ContextVar[Obj | None] = contextvars.ContextVar(
    "shard_current_root", default=None
)


def parse_handover(value: str) -> dict[str, int]:
    """Parses ``"pods=12,services=15"`` into ``{"pods": 12, "services": 15}``."""
    out: dict[str, int] = {}
    for part in value.split(","):
        resource, sep, rv = part.strip().partition("=")
        if sep and rv.isdigit():
            out[resource] = int(rv)
    return out


def format_handover(versions: Mapping[str, int]) -> str:
    """The inverse of :func:`parse_handover`."""
    return ",".join(f"{resource}={rv}" for resource, rv in sorted(versions.items()))


class ShardGate:
    """Admits this replica's passes and releases its roots on request; see the module docstring.

    Args:
        me: This replica's id.
        keys: The label and annotation keys.
        client: Writes the acknowledgement.
        caught_up: Tells whether the caches have delivered a resource version.
        metrics: Where drain times go.
        record: Where every admitted pass is written; None: nowhere.
        clock: Time source (waits and pass times: ``wall()``).
    """

    def __init__(self, me: str, keys: ShardKeys, client: PatchClient, *, caught_up: CaughtUp,
                 metrics: ShardMetrics | None = None, record: PassRecord | None = None,
                 clock: Clock = MONOTONIC) -> None:
        self.me = me
        self.keys = keys
        self._client = client
        self._caught_up = caught_up
        self.metrics = metrics
        self._record = record
        self._clock = clock
        self._enqueue: dict[str, Callable[[Request], None]] = {}
        self._forget: dict[str, Forget] = {}
        self._resource_of: dict[str, Resource] = {}
        """Per controller: the resource it reconciles, when given (see :meth:`wrap`)."""
        self._inflight: dict[str, int] = {}
        self._idle = asyncio.Condition()
        self._admitted: dict[str, tuple[tuple[str, Request], ...]] = {}
        """Per root key: the (controller, request) pairs admitted under it, but for the passes
        on the root itself, which a release derives (a tuple: a root has one or two, and a set
        of them would cost 216 bytes more per root)."""
        self._root_of: dict[tuple[str, Request], str] = {}
        self._parked: dict[str, set[tuple[str, Request]]] = {}
        self._released: set[tuple[str, Request]] = set()
        self._releasing: set[str] = set()
        self._repair: Repair | None = None
        self._repairing: set[str] = set()
        self._tasks = TaskSupervisor(f"shard gate {me}")

    # -- wiring -----------------------------------------------------------------------------

    def wrap(
        self,
        controller: str,
        resolve: Resolver,
        reconcile: ReconcileFunc,
        *,
        enqueue: Callable[[Request], None] | None = None,
        forget: Forget | None = None,
        resource: Resource | None = None,
    ) -> ReconcileFunc:
        """Returns ``reconcile`` behind the gate, for the controller named ``controller``.

        ``resource``, the resource the controller reconciles, lets the gate keep no record of
        the passes on a root itself: in a fleet of roots without children of their own kinds,
        those are all it admits; a release forgets the root's own key under each controller
        of its resource whether or not a pass ran on it.
        """
        if resource is not None:
            self._resource_of[controller] = resource
        if enqueue is not None:
            self._enqueue[controller] = enqueue
        if forget is not None:
            self._forget[controller] = forget

        async def gated(request: Request) -> Result:
            return await self._pass(controller, resolve, reconcile, request)

        return gated

    def set_enqueue(self, controller: str, enqueue: Callable[[Request], None]) -> None:
        """Tells the gate how to enqueue a parked request of ``controller`` again."""
        self._enqueue[controller] = enqueue

    def set_repair(self, repair: Repair) -> None:
        """Tells the gate how to put back a shard label edited by hand to name this replica."""
        self._repair = repair

    def root_handler(self, resource: Resource) -> EventHandlerFuncs:
        """Returns the handler to register on the informer of roots of ``resource``: it starts
        a release when a root of this replica shows the drain label, and a repair (see
        :meth:`set_repair`) when a root shows this replica's label but was assigned to another
        and released by none: a label edited by hand, which only this replica's informer sees
        at once (the sharder's selectors find a removed label or a dead replica's each step,
        but another live replica's only at its next full round)."""

        def seen(obj: Obj) -> None:
            meta = obj.get("metadata") or {}
            labels = meta.get("labels") or {}
            if labels.get(self.keys.shard) != self.me:
                return
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name", ""))
            key = Root(resource, namespace, name, obj).key
            if labels.get(self.keys.drain) == TRUE:
                if key not in self._releasing:
                    self._tasks.spawn(self._release(resource, namespace, name), name="release")
                return
            assigned = (meta.get("annotations") or {}).get(self.keys.assigned)
            hand_edited = assigned and assigned != self.me and not labels.get(self.keys.released)
            if hand_edited and self._repair is not None and key not in self._repairing:
                self._repairing.add(key)
                self._tasks.spawn(self._repair_label(self._repair, resource, obj, key), name="repair")

        return EventHandlerFuncs(add=lambda obj, _initial: seen(obj), update=lambda _o, n: seen(n))

    def stamp(self) -> dict[str, str]:
        """Returns the labels an object created now gets: the shard and root labels during an
        admitted pass, none outside one."""
        root = _current_root.get()
        if root is None:
            return {}
        uid = str((root.get("metadata") or {}).get("uid") or "")
        return {self.keys.shard: self.me, self.keys.root: uid} if uid else {self.keys.shard: self.me}

    async def close(self) -> None:
        """Stops the releases in progress (the process is stopping)."""
        await self._tasks.stop()
        if self._record is not None:
            self._record.close()

    # -- passes -----------------------------------------------------------------------------

    async def _pass(
        self, controller: str, resolve: Resolver, reconcile: ReconcileFunc, request: Request
    ) -> Result:
        item = (controller, request)
        root = resolve(request)
        if root is None:
            if item in self._released:
                return Result()
            gone = self._root_of.pop(item, None)
            if gone is not None:
                self._unadmit(gone, item)
            return await reconcile(request)
        root_key = root.key  # built once: the gate's bookkeeping is keyed by it
        verdict = self._verdict(root, root_key)
        if verdict == "park":
            self._parked.setdefault(root_key, set()).add(item)
            return Result()
        if verdict == "wait":
            return Result(requeue_after=CATCH_UP_RETRY)
        self._admit(root, root_key, item)
        self._inflight[root_key] = self._inflight.get(root_key, 0) + 1
        token = _current_root.set(root.obj)
        start = self._clock.wall().timestamp()
        try:
            return await reconcile(request)
        finally:
            _current_root.reset(token)
            if self._record is not None:
                key = f"{request.namespace}/{request.name}"
                self._record.write(Pass(self.me, controller, key, start, self._clock.wall().timestamp()))
            left = self._inflight[root_key] - 1
            if left:
                self._inflight[root_key] = left
            else:
                del self._inflight[root_key]
                async with self._idle:
                    self._idle.notify_all()

    def _verdict(self, root: Root, root_key: str) -> str:
        """``"admit"``, ``"park"`` (not ours now) or ``"wait"`` (ours; caches behind)."""
        if root.obj is None or root_key in self._releasing:
            return "park"
        meta = root.obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(self.keys.shard) != self.me or labels.get(self.keys.drain) == TRUE:
            return "park"
        annotations = meta.get("annotations") or {}
        if annotations.get(self.keys.assigned) != self.me:
            return "park"  # labelled by hand, not by the sharder: the sharder puts it back
        handover = annotations.get(self.keys.handover)
        if handover:
            for resource, rv in parse_handover(str(handover)).items():
                if not self._caught_up(root.namespace, resource, rv):
                    return "wait"
        return "admit"

    def _is_own(self, root: Root, item: tuple[str, Request]) -> bool:
        """Tells a pass on the root itself (by a controller of the root's resource)."""
        controller, request = item
        return (
            self._resource_of.get(controller) == root.resource
            and request.name == root.name
            and request.namespace == root.namespace
        )

    def _own_items(self, resource: Resource, namespace: str, name: str) -> set[tuple[str, Request]]:
        """The root's own key under each controller of its resource."""
        request = Request(namespace, name)
        return {(c, request) for c, r in self._resource_of.items() if r == resource}

    def _admit(self, root: Root, root_key: str, item: tuple[str, Request]) -> None:
        self._released.discard(item)
        if self._is_own(root, item):
            self._enqueue_parked(root_key, item)
            return
        if self._root_of.get(item) != root_key:  # else keep the string already stored
            self._root_of[item] = root_key
        admitted = self._admitted.get(root_key, ())
        if item not in admitted:
            self._admitted[root_key] = (*admitted, item)
        self._enqueue_parked(root_key, item)

    def _enqueue_parked(self, root_key: str, item: tuple[str, Request]) -> None:
        for controller, request in self._parked.pop(root_key, ()):
            if (controller, request) != item and controller in self._enqueue:
                self._enqueue[controller](request)

    def _unadmit(self, root_key: str, item: tuple[str, Request]) -> None:
        left = tuple(i for i in self._admitted.get(root_key, ()) if i != item)
        if left:
            self._admitted[root_key] = left
        else:
            self._admitted.pop(root_key, None)

    async def _repair_label(self, repair: Repair, resource: Resource, obj: Obj, key: str) -> None:
        try:
            await repair(resource, obj)
        except ApiError as exc:
            log.info("%s: hand-edited shard label of %s not put back: %s", self.me, key, exc)
        finally:
            self._repairing.discard(key)

    # -- releasing --------------------------------------------------------------------------

    async def _release(self, resource: Resource, namespace: str, name: str) -> None:
        await self.release(resource, namespace, name)

    async def release(self, resource: Resource, namespace: str, name: str) -> bool:
        """Lets one root go; returns whether this call acknowledged the drain.

        Blocks until the passes in flight on the root's keys have ended and the acknowledgement
        is written (or the root is gone, or someone else changed its shard label).
        """
        root_key = Root(resource, namespace, name, None).key
        if root_key in self._releasing:
            return False
        self._releasing.add(root_key)
        started = self._clock.now()
        try:
            async with self._idle:
                await self._idle.wait_for(lambda: root_key not in self._inflight)
            items = {
                *self._admitted.pop(root_key, ()),
                *self._parked.pop(root_key, ()),
                *self._own_items(resource, namespace, name),
            }
            for item in items:
                self._root_of.pop(item, None)
                self._released.add(item)
                forget = self._forget.get(item[0])
                if forget is not None:
                    stopping = forget(item[1])
                    if stopping is not None:
                        await stopping
            acked = await self._acknowledge(resource, namespace, name)
            if acked and self.metrics is not None:
                self.metrics.drain_seconds.observe(max(0.0, self._clock.now() - started))
            return acked
        finally:
            self._releasing.discard(root_key)

    async def _acknowledge(self, resource: Resource, namespace: str, name: str) -> bool:
        ops = [
            {"op": "test", "path": label_path(self.keys.shard), "value": self.me},
            {"op": "test", "path": annotation_path(self.keys.assigned), "value": self.me},
            {"op": "remove", "path": label_path(self.keys.drain)},
            {"op": "remove", "path": label_path(self.keys.shard)},
            {"op": "add", "path": label_path(self.keys.released), "value": self.me},
        ]
        while True:
            try:
                await self._client.patch(
                    resource, name, ops, namespace=namespace, patch_type="json"
                )
                log.info("%s released %s/%s", self.me, namespace, name)
                return True
            except (NotFound, Invalid) as exc:  # gone, or its shard label is not ours any more
                log.info("%s: %s/%s not released: %s", self.me, namespace, name, exc)
                return False
            except ApiError as exc:
                log.warning("%s: releasing %s/%s failed: %r", self.me, namespace, name, exc)
            await self._clock.sleep(ACK_RETRY)
