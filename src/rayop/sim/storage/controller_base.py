"""The base class of the in-process controllers: kubelet, controller-manager, dashboard registry.

Each controller subscribes to the :class:`~rayop.sim.storage.store.Store`'s change feed, receives
every write in resourceVersion order through a cheap synchronous callback, and handles the
events one at a time in a worker task of its own, so that a slow reaction never holds up the
API server's write path. The helpers here read and write the store the way a real controller
talks to the API server: read the latest version, change it, write it back, retry on conflict.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, ClassVar

from rayop.apimachinery.objects import Obj
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.store import Store, clone

log = logging.getLogger(__name__)

Mutator = Callable[[Obj], bool]
"""Changes an object in place; returns False when nothing needs writing."""

_MAX_CONFLICT_RETRIES = 20


def error_code(exc: BaseException) -> int | None:
    """Returns the HTTP status code a store error carries, or None for other exceptions."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


def meta(obj: Obj) -> Obj:
    """Returns ``obj["metadata"]``, creating it when absent."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = {}
        obj["metadata"] = md
    return md


class StoreController:
    """Feeds store events to :meth:`handle` in order, from a worker task of its own.

    Subclasses name the resources they follow in :attr:`watched` (or override :meth:`wants`, a
    cheap filter run inside the store's write path), override :meth:`resync` (called once at
    start to catch up with objects already stored) and :meth:`handle`. Start with :meth:`start`,
    stop with :meth:`stop`.
    """

    name = "controller"
    watched: ClassVar[frozenset[tuple[str, str]] | None] = None
    """The ``(group, plural)`` of every resource whose events matter; None: all of them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._events: asyncio.Queue[tuple[str, ResourceInfo, Obj, Obj | None]] = asyncio.Queue()
        self._unsubscribe: Callable[[], None] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Subscribes to the store, catches up with its content and starts the worker."""
        self._unsubscribe = self.store.subscribe(self._on_event)
        await self.resync()
        self._worker = asyncio.create_task(self._run(), name=f"sim-{self.name}")

    async def stop(self) -> None:
        """Unsubscribes and cancels the worker and every task it spawned; blocks until done."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        tasks = [t for t in (self._worker, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._worker = None
        self._tasks.clear()

    async def wait_idle(self) -> None:
        """Blocks until every event received so far has been handled."""
        await self._idle.wait()

    # -- subclass hooks ------------------------------------------------------------------

    def wants(self, info: ResourceInfo) -> bool:
        """Tells whether events of this resource matter; runs inside the store's write path."""
        return self.watched is None or (info.group, info.plural) in self.watched

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        """Updates in-memory indexes synchronously, in store order (optional)."""

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        """Tells, after :meth:`observe`, whether :meth:`handle` must see the event (default True).

        A cheap filter run inside the store's write path, so that events a controller would
        ignore never wake its worker.
        """
        return True

    async def resync(self) -> None:
        """Catches up with objects stored before the subscription (optional)."""

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        """Reacts to one event; exceptions are logged and swallowed."""

    # -- plumbing ------------------------------------------------------------------------

    def _on_event(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if not self.wants(info):
            return
        self.observe(event_type, info, obj, old)
        if not self.needs_handling(event_type, info, obj, old):
            return
        self._idle.clear()
        self._events.put_nowait((event_type, info, obj, old))

    async def _run(self) -> None:
        while True:
            if self._events.empty():
                self._idle.set()
            event_type, info, obj, old = await self._events.get()
            try:
                await self.handle(event_type, info, obj, old)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("sim %s: handling %s %s failed", self.name, event_type, info.plural)

    def spawn(self, coro: Any, *, name: str | None = None) -> asyncio.Task[Any]:
        """Runs ``coro`` as a task owned by this controller (cancelled by :meth:`stop`)."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("sim %s: task failed", self.name, exc_info=task.exception())

    # -- store helpers -------------------------------------------------------------------

    def resource(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """Returns the registered resource, or None when the store does not serve it."""
        return find_resource(self.store, group, version, plural)

    async def get(self, info: ResourceInfo, namespace: str, name: str) -> Obj | None:
        """Returns a private copy of the stored object, or None when it does not exist."""
        # Store.get copies by default.
        try:
            obj = await self.store.get(info, namespace, name)
        except Exception as exc:
            if error_code(exc) == 404:
                return None
            raise
        return obj

    async def mutate(
        self,
        info: ResourceInfo,
        namespace: str,
        name: str,
        change: Mutator,
        *,
        subresource: str | None = None,
        uid: str | None = None,
        with_status: bool = False,
    ) -> Obj | None:
        """Reads, changes and writes back an object, retrying on conflict.

        Args:
            info: the resource.
            namespace: the namespace ("" for cluster-scoped objects).
            name: the object's name.
            change: changes the object in place; returns False when there is nothing to write.
                With ``subresource="status"`` only ``obj["status"]`` is a private copy (the
                store ignores everything else): the change must modify nothing but the status.
            subresource: "status" to write the status subresource.
            uid: when given, an object with another uid is left alone.
            with_status: write spec and status in one main-resource commit (see
                :meth:`Store.update`).

        Returns:
            The written object as stored (shared: read-only), or None when the object is gone
            or nothing was written.
        """
        for _ in range(_MAX_CONFLICT_RETRIES):
            stored = self.store.peek(info, namespace, name)
            if stored is None or (uid is not None and meta(stored).get("uid") != uid):
                return None
            obj: Obj = _status_copy(stored) if subresource == "status" else clone(stored)
            if not change(obj):
                return None
            try:
                result = await self.store.update(
                    info,
                    namespace,
                    name,
                    obj,
                    subresource=subresource,
                    copy=False,
                    with_status=with_status,
                )
            except Exception as exc:
                code = error_code(exc)
                if code == 409:
                    continue
                if code == 404:
                    return None
                raise
            return result
        log.warning("sim %s: gave up writing %s/%s after conflicts", self.name, namespace, name)
        return None

    async def delete(
        self,
        info: ResourceInfo,
        namespace: str,
        name: str,
        *,
        propagation_policy: str | None = None,
        uid: str | None = None,
    ) -> None:
        """Deletes an object (with a uid precondition when given); ignores NotFound/Conflict."""
        preconditions = {"uid": uid} if uid else None
        try:
            await self.store.delete(
                info,
                namespace,
                name,
                propagation_policy=propagation_policy,
                preconditions=preconditions,
            )
        except Exception as exc:
            if error_code(exc) not in (404, 409):
                raise


def _status_copy(stored: Obj) -> Obj:
    """Returns a shallow copy of ``stored`` whose metadata and status are private copies."""
    obj = dict(stored)
    obj["metadata"] = dict(stored["metadata"])
    if "status" in stored:
        obj["status"] = clone(stored["status"])
    return obj


def find_resource(store: Store, group: str, version: str, plural: str) -> ResourceInfo | None:
    """Looks a resource up in the store's registry; None when it is not served."""
    return store.resources.get(group, version, plural)


def iter_resources(store: Store) -> list[ResourceInfo]:
    """Returns every resource the store currently serves (built-in and custom)."""
    return list(store.resources.all())
