"""The object store's state and read side: objects, one global resourceVersion, change feed, watches.

Single-threaded asyncio. Stored objects are never mutated in place: every write replaces the
dict, so events and list snapshots may share references safely. Public methods copy objects on
the way in and out unless called with ``copy=False`` (the HTTP layer, which only serialises).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any, Protocol

import orjson

from rayop.sim.admission.defaults import IpAllocator, apply_create_defaults
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.event_conversion import core_to_events_v1, events_v1_to_core
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry
from rayop.sim.machinery.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from rayop.sim.storage.watchcache import Event, History, Watcher, WatchStream

__all__ = [
    "CRD_KEY",
    "DEFAULT_NAMESPACES",
    "NAME_ALPHABET",
    "NS_KEY",
    "Expired",
    "Persistence",
    "StoreCore",
    "Subscriber",
    "clone",
    "timestamp",
]

Obj = dict[str, Any]
Subscriber = Callable[[str, ResourceInfo, Obj, "Obj | None"], None]
Expired = se.StatusError  # a 410 StatusError; kept as a name for readers of the API

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
Convert = Callable[[Obj], Obj]
# (group, plural) of an aliased resource -> (into storage form, out of storage form)
_ALIASES: dict[tuple[str, str], tuple[Convert, Convert]] = {
    ("events.k8s.io", "events"): (events_v1_to_core, core_to_events_v1),
}
NS_KEY = "/namespaces"
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def clone(obj: Any) -> Any:
    """Returns a deep copy of a JSON-like value (via orjson, faster than copy.deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


class Persistence(Protocol):
    """Durable storage of the store's objects (see rayop.sim.storage.sqlite)."""

    def load(self) -> tuple[int, list[tuple[str, Obj]]]:
        """Returns the last RV and every stored ``(resource key, object)``."""
        ...

    def write(self, rv: int, key: str, namespace: str, name: str, obj: Obj | None) -> None:
        """Durably stores (or, with obj None, removes) one object at ``rv`` (blocks briefly)."""
        ...


_ts_cache: tuple[int, str] = (-1, "")


def timestamp(t: float) -> str:
    global _ts_cache
    sec = int(t)
    if _ts_cache[0] != sec:
        _ts_cache = (sec, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec)))
    return _ts_cache[1]


def _parse_selectors(
    label_selector: str | LabelSelector | None, field_selector: str | FieldSelector | None
) -> tuple[LabelSelector, FieldSelector]:
    try:
        lsel = (
            label_selector
            if isinstance(label_selector, LabelSelector)
            else parse_label_selector(label_selector)
        )
        fsel = (
            field_selector
            if isinstance(field_selector, FieldSelector)
            else parse_field_selector(field_selector)
        )
    except SelectorError as exc:
        raise se.bad_request(str(exc)) from exc
    return lsel, fsel


class StoreCore:
    """In-memory objects with a global resourceVersion, watch history and a change feed.

    The write path is in :class:`rayop.sim.storage.store.Store`, the class to instantiate.

    Args:
        registry: Served resources (a fresh one with the built-ins by default).
        persistence: Durable storage; when given, its contents are loaded now.
        history_size: Events kept per resource for watches; older RVs get 410 Expired.
        graceful_pod_deletion: When True, deleting a scheduled pod with a grace period only
            sets deletionTimestamp, and the kubelet finishes it with :meth:`finalize_delete`.
        wall_clock: Returns Unix time for creationTimestamp/deletionTimestamp.
        seed: Seed for generateName suffixes and node ports (random when None).
    """

    def __init__(
        self,
        *,
        registry: ResourceRegistry | None = None,
        persistence: Persistence | None = None,
        history_size: int = 10_000,
        graceful_pod_deletion: bool = True,
        wall_clock: Callable[[], float] = time.time,
        seed: int | None = None,
    ) -> None:
        self.resources = registry or ResourceRegistry()
        self.graceful_pod_deletion = graceful_pod_deletion
        self._persistence = persistence
        self._history_size = history_size
        self._wall = wall_clock
        self._rng = random.Random(seed)
        self._alloc = IpAllocator(rng=self._rng)
        self._rv = 0
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._history: dict[str, History] = {}
        self._watchers: dict[str, list[Watcher]] = {}
        self._subscribers: list[Subscriber] = []
        self._base_rv = 0
        if persistence is not None:
            self._load(persistence)
        for ns in DEFAULT_NAMESPACES:
            if ns not in self._objects.get(NS_KEY, {}).get("", {}):
                self._commit_sync(self._new_namespace(ns))

    # ----------------------------------------------------------------- loading
    def _load(self, persistence: Persistence) -> None:
        rv, rows = persistence.load()
        rows.sort(key=lambda r: r[0] != CRD_KEY)
        for key, obj in rows:
            if key == CRD_KEY:
                self.resources.register_crd(obj)
            if key == "/services":
                self._alloc.note_used(obj)
            meta = obj["metadata"]
            self._bucket(key, meta.get("namespace", ""))[meta["name"]] = obj
        self._rv = rv
        self._base_rv = rv

    def _new_namespace(self, name: str) -> Obj:
        info = self.resources.get("", "v1", "namespaces")
        assert info is not None
        obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        self._stamp_new(info, obj)
        apply_create_defaults(NS_KEY, obj, self._alloc)
        return obj

    def _commit_sync(self, obj: Obj) -> None:
        info = self.resources.get("", "v1", "namespaces")
        assert info is not None
        self._commit(info, "ADDED", "", obj["metadata"]["name"], obj, None)

    # ----------------------------------------------------------------- basics
    def current_rv(self) -> int:
        """Returns the newest resourceVersion (0 before any write)."""
        return self._rv

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Registers a synchronous change-feed callback; returns a function that unregisters it.

        The callback gets ``(event_type, info, obj, old_obj)`` for every committed change
        (ADDED, MODIFIED, DELETED) of every resource, in RV order, before the write returns.
        ``obj`` and ``old_obj`` are the store's own (shared) dicts: treat them as read-only and
        copy (:func:`clone`) before changing anything. The callback must not block; schedule
        tasks for follow-up writes.
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def _bucket(self, key: str, namespace: str) -> dict[str, Obj]:
        by_ns = self._objects.get(key)
        if by_ns is None:
            by_ns = self._objects[key] = {}
        b = by_ns.get(namespace)
        if b is None:
            b = by_ns[namespace] = {}
        return b

    def _find(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        ns = (namespace or "") if info.namespaced else ""
        by_ns = self._objects.get(info.key)
        if by_ns is None:
            return None
        b = by_ns.get(ns)
        return None if b is None else b.get(name)

    def _alias(self, info: ResourceInfo) -> tuple[ResourceInfo, Convert, Convert] | None:
        """Returns (stored resource, into, out) for a resource served through a conversion."""
        if not info.storage_key:
            return None
        conv = _ALIASES.get((info.group, info.plural))
        canon = self.resources.by_key(info.storage_key)
        if conv is None or canon is None or canon is info:
            return None
        return canon, conv[0], conv[1]

    def _not_found(self, info: ResourceInfo, name: str) -> se.StatusError:
        return se.not_found(info.plural, info.group, name)

    def _stamp_new(self, info: ResourceInfo, obj: Obj) -> None:
        meta = obj["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = timestamp(self._wall())
        if info.has_status or info.is_custom:
            meta["generation"] = 1
        for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)

    def _commit(
        self,
        info: ResourceInfo,
        type_: str,
        namespace: str,
        name: str,
        obj: Obj,
        old: Obj | None,
    ) -> Obj:
        """Assigns the next RV, stores (or removes) ``obj``, records and fans out the event."""
        self._rv += 1
        rv = self._rv
        key = info.key
        if type_ == "DELETED":
            obj = dict(obj)
            obj["metadata"] = dict(obj["metadata"])
        obj["metadata"]["resourceVersion"] = str(rv)
        bucket = self._bucket(key, namespace)
        if type_ == "DELETED":
            bucket.pop(name, None)
        else:
            bucket[name] = obj
        if self._persistence is not None:
            self._persistence.write(rv, key, namespace, name, None if type_ == "DELETED" else obj)
        ev = Event(type_, obj, rv, _loop_time(), old if type_ == "MODIFIED" else None)
        hist = self._history.get(key)
        if hist is None:
            hist = self._history[key] = History(self._history_size, self._base_rv)
        hist.append(ev)
        for w in self._watchers.get(key, ()):
            w.offer(ev)
        for cb in list(self._subscribers):
            cb(type_, info, obj, old)
        return obj

    # ----------------------------------------------------------------- reads
    async def get(
        self, info: ResourceInfo, namespace: str | None, name: str, *, copy: bool = True
    ) -> Obj:
        """Returns the named object.

        Raises:
            StatusError: 404 NotFound.
        """
        alias = self._alias(info)
        if alias is not None:
            return alias[2](await self.get(alias[0], namespace, name, copy=copy))
        obj = self._find(info, namespace, name)
        if obj is None:
            raise self._not_found(info, name)
        return self._out(info, obj, copy)

    def peek(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        """Returns the stored object without copying (read-only!), or None. Never blocks."""
        alias = self._alias(info)
        if alias is not None:
            found = self._find(alias[0], namespace, name)
            return None if found is None else alias[2](found)
        return self._find(info, namespace, name)

    def _out(self, info: ResourceInfo, obj: Obj, copy: bool) -> Obj:
        if obj.get("apiVersion") != info.api_version:
            obj = dict(obj)
            obj["apiVersion"] = info.api_version
        return clone(obj) if copy else obj

    def iter_objects(self, info: ResourceInfo, namespace: str | None = None) -> Iterator[Obj]:
        """Iterates over stored objects (read-only, unsorted); for internal controllers."""
        by_ns = self._objects.get(info.key) or {}
        if namespace is not None and info.namespaced:
            yield from list((by_ns.get(namespace) or {}).values())
            return
        for b in list(by_ns.values()):
            yield from list(b.values())

    def list(
        self,
        info: ResourceInfo,
        namespace: str | None = None,
        *,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
        copy: bool = True,
    ) -> tuple[list[Obj], int]:
        """Returns the matching objects sorted by namespace and name, and the current RV.

        Raises:
            StatusError: 400 BadRequest for an unparsable selector.
        """
        alias = self._alias(info)
        if alias is not None:
            items, rv = self.list(alias[0], namespace, label_selector=label_selector, copy=copy)
            fs = _parse_selectors(None, field_selector)[1]
            return [o for o in map(alias[2], items) if fs.empty or fs.matches(o)], rv
        lsel, fsel = _parse_selectors(label_selector, field_selector)
        by_ns = self._objects.get(info.key) or {}
        if namespace is not None and info.namespaced:
            spaces = [namespace] if namespace in by_ns else []
        else:
            spaces = sorted(by_ns)
        out: list[Obj] = []
        api_version = info.api_version
        use_l, use_f = not lsel.empty, not fsel.empty
        for ns in spaces:
            b = by_ns[ns]
            for name in sorted(b):
                obj = b[name]
                if use_l and not lsel.matches(obj["metadata"].get("labels")):
                    continue
                if use_f and not fsel.matches(obj):
                    continue
                if copy or obj.get("apiVersion") != api_version:
                    obj = self._out(info, obj, copy)
                out.append(obj)
        return out, self._rv

    # ----------------------------------------------------------------- watch
    def open_watch(
        self,
        info: ResourceInfo,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
    ) -> WatchStream:
        """Opens a watch stream of shared, read-only :class:`Event` records (never blocks).

        ``resource_version`` None, "" or "0" starts with synthetic ADDED events of the current
        state; otherwise the stream replays every change after that RV.

        Raises:
            StatusError: 410 Expired when the RV is older than the retained history; 400 for a
                malformed RV or selector.
        """
        alias = self._alias(info)
        convert: Convert | None = None
        shown = info
        if alias is not None:
            info, convert = alias[0], alias[2]
            field_selector = None
        lsel, fsel = _parse_selectors(label_selector, field_selector)
        ns = namespace if info.namespaced else None
        watcher = Watcher(ns, lsel, fsel)
        key = info.key
        if resource_version in (None, "", "0"):
            objs, _ = self.list(info, ns, label_selector=lsel, field_selector=fsel, copy=False)
            initial = [Event("ADDED", o, 0, 0.0) for o in objs]
        else:
            try:
                start = int(str(resource_version))
            except ValueError as exc:
                raise se.bad_request(f"invalid resource version: {resource_version}") from exc
            hist = self._history.get(key)
            compacted = hist.compacted_rv if hist is not None else self._base_rv
            if start < compacted:
                raise se.expired(f"too old resource version: {start} ({compacted})")
            initial = []
            if hist is not None:
                for ev in hist.since(start):
                    watcher.offer(ev)
                initial = watcher.take_all()
        self._watchers.setdefault(key, []).append(watcher)

        def unregister(w: Watcher) -> None:
            lst = self._watchers.get(key)
            if lst and w in lst:
                lst.remove(w)

        def bookmark() -> Event:
            obj = {
                "kind": shown.kind,
                "apiVersion": shown.api_version,
                "metadata": {"resourceVersion": str(self._rv)},
            }
            return Event("BOOKMARK", obj, self._rv, _loop_time())

        return WatchStream(
            watcher, initial, unregister=unregister, bookmark=bookmark, convert=convert
        )

    def watch(
        self,
        info: ResourceInfo,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
        bookmark_interval: float | None = None,
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        """Returns an async iterator of ``(event_type, obj_copy)`` (see :meth:`open_watch`).

        With ``bookmark_interval`` a BOOKMARK is yielded after that many idle seconds.
        Use ``async for t, obj in store.watch(...)``; close with ``aclose()``.

        Raises:
            StatusError: 410 Expired (raised here, before iteration).
        """
        stream = self.open_watch(
            info,
            namespace,
            resource_version=resource_version,
            label_selector=label_selector,
            field_selector=field_selector,
        )

        async def gen() -> AsyncGenerator[tuple[str, Obj], None]:
            try:
                while True:
                    ev = await stream.next(bookmark_interval)
                    if ev is None:
                        if stream.closed:
                            return
                        ev = stream.bookmark()
                    yield ev.type, clone(ev.obj)
            finally:
                stream.close()

        return gen()


def _loop_time() -> float:
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return 0.0
