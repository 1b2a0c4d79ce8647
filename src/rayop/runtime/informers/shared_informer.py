"""A shared informer: one list+watch of a resource feeding a cache and any number of handlers.

The reflector (:mod:`rayop.runtime.informers.reflector`) keeps the cache in step with the API server. Every
change is applied to the cache first and then handed to each registered handler in order (as
client-go's ``tools/cache/shared_informer.go`` does). Cached objects are frozen: readers share them
and cannot change them (``copy.deepcopy`` gives a mutable copy). The cache stores objects compactly
and decodes them on read (:class:`rayop.runtime.informers.indexer.Indexer`); a LIST is stored page by page as
it arrives.

Handlers are called synchronously on the event loop and must not block. An exception raised by a
handler is logged and does not reach the informer or the other handlers.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rayop.apimachinery.labels import LabelSelector, as_label_selector, format_selector
from rayop.kube.resource import Resource
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.informers.backoff import DEFAULT_BACKOFF, BackoffSettings
from rayop.runtime.informers.frozen import freeze_json
from rayop.runtime.informers.indexer import (
    DEFAULT_DECODED_CACHE_SIZE,
    NAMESPACE_INDEX,
    Indexer,
    IndexFunc,
    Obj,
    make_key,
    object_key,
    resource_version,
)
from rayop.runtime.informers.reflector import ListWatchClient, Reflector
from rayop.runtime.supervisor import TaskSupervisor
from rayop.runtime.timeouts import clock_timeout

log = logging.getLogger(__name__)

RESYNC_CHUNK = 200
"""A resync yields to the event loop after handing this many objects to the handlers."""

Transform = Callable[[dict[str, Any]], dict[str, Any]]
"""Rewrites an object before it is cached (for example to drop fields nobody reads)."""


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drops ``metadata.managedFields`` (server-side-apply bookkeeping no controller reads)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        del meta["managedFields"]
    return obj


class EventHandler(Protocol):
    """Receives cache changes; each method is called after the cache is updated, must not block."""

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


@dataclass(frozen=True, slots=True)
class EventHandlerFuncs:
    """An :class:`EventHandler` built from optional plain functions."""

    add: Callable[[Obj, bool], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj], None] | None = None

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        if self.add is not None:
            self.add(obj, is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self.delete is not None:
            self.delete(obj)


class HandlerRegistration:
    """The handle returned by :meth:`SharedInformer.add_event_handler`."""

    def __init__(self, handler: EventHandler) -> None:
        self.handler = handler
        self._synced = False

    def has_synced(self) -> bool:
        """Tells whether this handler has received every object of the initial list."""
        return self._synced


class SharedInformer:
    """Caches one resource (optionally one namespace and label selector) via list+watch.

    ``decoded_cache_size`` is how many decoded objects the cache keeps for repeated reads; every
    other object is decoded each time it is read (about 70 µs for a typical pod).
    """

    def __init__(
        self,
        client: ListWatchClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | Mapping[str, str] | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        clock: Clock = MONOTONIC,
        backoff: BackoffSettings = DEFAULT_BACKOFF,
        rng: random.Random | None = None,
        decoded_cache_size: int = DEFAULT_DECODED_CACHE_SIZE,
        server_only_labels: frozenset[str] = frozenset(),
    ) -> None:
        self.resource = resource
        self.namespace = namespace
        self.label_selector = format_selector(label_selector)
        self._resync_period = resync_period
        self._transform = transform
        self._clock = clock
        self._indexer = Indexer(
            indexers, decoded_cache_size=decoded_cache_size, server_only_labels=server_only_labels
        )
        self._registrations: list[HandlerRegistration] = []
        self._synced = False
        self._synced_event = asyncio.Event()
        self._tasks = TaskSupervisor(f"informer {self}")
        self.reflector = Reflector(
            client,
            resource,
            _Feed(self),
            namespace=namespace,
            label_selector=self.label_selector,
            field_selector=field_selector,
            clock=clock,
            backoff=backoff,
            rng=rng,
        )

    # -- handlers ---------------------------------------------------------------------------

    def add_event_handler(self, handler: EventHandler) -> HandlerRegistration:
        """Registers ``handler``; returns its registration. Never blocks.

        The handler is given ``on_add(obj, True)`` for every object already cached (also midway
        through the initial list) before this returns, and then every later change. Its
        registration is synced at once if the informer is, else when the informer syncs.
        """
        registration = HandlerRegistration(handler)
        self._registrations.append(registration)
        for obj in self._indexer.values():  # decoded one at a time: no spike
            _call(handler.on_add, obj, True)
        registration._synced = self._synced
        return registration

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Stops delivering events to a registered handler."""
        with contextlib.suppress(ValueError):
            self._registrations.remove(registration)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Adds named index functions (also indexing what is already cached).

        Raises:
            ValueError: an index of that name already exists.
        """
        self._indexer.add_indexers(indexers)

    # -- reading ----------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """Tells whether the first LIST has been stored and handed to every handler."""
        return self._synced

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Blocks until synced or ``timeout`` seconds pass on the clock; returns whether it did."""
        if self._synced:
            return True
        try:
            async with clock_timeout(self._clock, timeout):
                await self._synced_event.wait()
        except TimeoutError:
            return False
        return True

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """Returns the cached object, or None; never blocks."""
        return self._indexer.get(make_key(namespace, name))

    def get_by_key(self, key: str) -> Obj | None:
        """Returns the cached object stored under ``namespace/name``, or None."""
        return self._indexer.get(key)

    def list(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | Mapping[str, str] | LabelSelector | None = None,
    ) -> list[Obj]:
        """Returns the cached objects in ``namespace`` (all if None) matching ``label_selector``.

        Labels are matched before decoding: only the objects returned are decoded, and a
        selector that names a label's value reads that label's index, not the namespace.
        """
        if label_selector is not None:
            return self._indexer.list_selected(namespace, as_label_selector(label_selector))
        if namespace is None:
            return self._indexer.select(None, None)
        return self._indexer.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        """Returns the cached objects filed under ``value`` in the named index.

        Raises:
            KeyError: no index has that name.
        """
        return self._indexer.by_index(index, value)

    def __len__(self) -> int:
        return len(self._indexer)

    @property
    def changes(self) -> int:
        """How many times the cache stored or removed an object (it only grows): while it stays
        the same, every read returns what it returned before."""
        return self._indexer.changes

    def stored_bytes(self) -> int:
        """Returns the total size of the compact encodings in the cache (for diagnostics)."""
        return self._indexer.stored_bytes()

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether :meth:`start` has been called and :meth:`stop` has not."""
        return self._tasks.running

    def start(self) -> None:
        """Starts list+watch (and resync) in background tasks; idempotent; never blocks.

        The tasks belong to the informer's :class:`~rayop.runtime.supervisor.TaskSupervisor`
        and end with :meth:`stop`.
        """
        if self._tasks.running:
            return
        self._tasks.spawn(self.reflector.run(), name="reflector")
        if self._resync_period:
            self._tasks.spawn(self._resync_loop(), name="resync")

    async def run(self) -> None:
        """Starts the informer and blocks until cancelled or stopped."""
        self.start()
        try:
            await self._tasks.wait()
        except asyncio.CancelledError:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stops list+watch and blocks until its tasks have ended; the cache is kept."""
        await self._tasks.stop()

    def __str__(self) -> str:
        where = self.namespace or "*"
        sel = f" {self.label_selector}" if self.label_selector else ""
        return f"{self.resource}@{where}{sel}"

    # -- feeding ----------------------------------------------------------------------------

    async def _resync_loop(self) -> None:
        assert self._resync_period is not None
        period = max(1.0, self._resync_period)
        while True:
            await self._clock.sleep(period)
            if self._synced:
                await self._resync()

    async def _resync(self) -> None:
        """Hands every cached object to the handlers as an update of itself.

        Objects are decoded one at a time, and the event loop gets a turn every
        :data:`RESYNC_CHUNK` objects, so a large cache neither spikes memory nor stalls the loop.
        """
        for count, key in enumerate(builtins.list(self._indexer)):
            if count and count % RESYNC_CHUNK == 0:
                await asyncio.sleep(0)
            obj = self._indexer.get_quietly(key)
            if obj is not None:
                self._dispatch_update(obj, obj)

    def _prepare(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._transform(obj) if self._transform is not None else obj

    def _replace(self, items: builtins.list[dict[str, Any]], list_rv: str) -> None:
        replacement = _Replacement(self)
        replacement.add_page(items)
        replacement.finish(list_rv)

    def _mark_synced(self) -> None:
        if not self._synced:
            self._synced = True
            for registration in self._registrations:
                registration._synced = True
            self._synced_event.set()

    def _upsert(self, obj: dict[str, Any]) -> None:
        new, old = self._indexer.put(self._prepare(obj), owned=True)
        if old is None:
            self._dispatch_add(new, False)
        else:
            self._dispatch_update(old, new)

    def _delete(self, obj: dict[str, Any]) -> None:
        old = self._indexer.remove(object_key(obj))
        final: Obj = (
            freeze_json(self._prepare(obj)) if obj.get("metadata") else old or freeze_json(obj)
        )
        self._dispatch_delete(final)

    def _dispatch_add(self, obj: Obj, initial: bool) -> None:
        for registration in tuple(self._registrations):
            _call(registration.handler.on_add, obj, initial)

    def _dispatch_update(self, old: Obj, new: Obj) -> None:
        for registration in tuple(self._registrations):
            _call(registration.handler.on_update, old, new)

    def _dispatch_delete(self, obj: Obj) -> None:
        for registration in tuple(self._registrations):
            _call(registration.handler.on_delete, obj)


def _call(method: Callable[..., None], *args: Any) -> None:
    try:
        method(*args)
    except Exception:
        log.exception("informer event handler %r failed", method)


class _Replacement:
    """Replaces an informer's cache with a LIST result delivered page by page."""

    def __init__(self, informer: SharedInformer) -> None:
        self._informer = informer
        self._initial = not informer._synced
        self._seen: set[str] = set()

    def add_page(self, items: list[dict[str, Any]]) -> None:
        """Stores one page (consuming ``items``); adds and updates go to the handlers."""
        informer = self._informer
        indexer = informer._indexer
        for index, item in enumerate(items):
            items[index] = None  # type: ignore[call-overload]  # free decoded items as we go
            key = object_key(item)
            self._seen.add(key)
            if indexer.resource_version(key) == resource_version(item):
                continue
            new, old = indexer.put(informer._prepare(item), owned=True)
            if old is None:
                informer._dispatch_add(new, self._initial)
            else:
                informer._dispatch_update(old, new)

    def finish(self, resource_version: str) -> None:
        """Removes (and reports as deleted) what no page held; marks the informer synced."""
        informer = self._informer
        for key in [k for k in informer._indexer if k not in self._seen]:
            gone = informer._indexer.remove(key)
            if gone is not None:
                informer._dispatch_delete(gone)
        informer._mark_synced()


class _Feed:
    """Adapts an informer to the reflector's store protocol."""

    def __init__(self, informer: SharedInformer) -> None:
        self._informer = informer

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self._informer._replace(items, resource_version)

    def begin_replace(self) -> _Replacement:
        return _Replacement(self._informer)

    def add(self, obj: dict[str, Any]) -> None:
        self._informer._upsert(obj)

    def update(self, obj: dict[str, Any]) -> None:
        self._informer._upsert(obj)

    def delete(self, obj: dict[str, Any]) -> None:
        self._informer._delete(obj)
