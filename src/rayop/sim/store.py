"""The object store of the embedded API server: objects, one global resourceVersion, watches.

Single-threaded asyncio. Stored objects are never mutated in place: every write replaces the
dict, so events and list snapshots may share references safely. Public methods copy objects on
the way in and out unless called with ``copy=False`` (the HTTP layer, which only serialises).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from typing import Any, Protocol

import orjson

from rayop.sim import crd as crd_mod
from rayop.sim import status_errors as se
from rayop.sim.defaults import IpAllocator, apply_create_defaults, apply_update_defaults
from rayop.sim.event_conversion import core_to_events_v1, events_v1_to_core
from rayop.sim.resources import ResourceInfo, ResourceRegistry
from rayop.sim.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from rayop.sim.validation import validate_object_meta
from rayop.sim.watchcache import Event, History, Watcher, WatchStream

__all__ = ["Expired", "Persistence", "Store", "Subscriber", "clone"]

Obj = dict[str, Any]
Subscriber = Callable[[str, ResourceInfo, Obj, "Obj | None"], None]
Expired = se.StatusError  # a 410 StatusError; kept as a name for readers of the API

_CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
Convert = Callable[[Obj], Obj]
# (group, plural) of an aliased resource -> (into storage form, out of storage form)
_ALIASES: dict[tuple[str, str], tuple[Convert, Convert]] = {
    ("events.k8s.io", "events"): (events_v1_to_core, core_to_events_v1),
}
_NS_KEY = "/namespaces"
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def clone(obj: Any) -> Any:
    """Returns a deep copy of a JSON-like value (via orjson, faster than copy.deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


class Persistence(Protocol):
    """Durable storage of the store's objects (see rayop.sim.persistence)."""

    def load(self) -> tuple[int, list[tuple[str, Obj]]]:
        """Returns the last RV and every stored ``(resource key, object)``."""
        ...

    def write(self, rv: int, key: str, namespace: str, name: str, obj: Obj | None) -> None:
        """Durably stores (or, with obj None, removes) one object at ``rv`` (blocks briefly)."""
        ...


_ts_cache: tuple[int, str] = (-1, "")


def _timestamp(t: float) -> str:
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


class Store:
    """In-memory objects with a global resourceVersion, watch history and a change feed.

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
            if ns not in self._objects.get(_NS_KEY, {}).get("", {}):
                self._commit_sync(self._new_namespace(ns))

    # ----------------------------------------------------------------- loading
    def _load(self, persistence: Persistence) -> None:
        rv, rows = persistence.load()
        rows.sort(key=lambda r: r[0] != _CRD_KEY)
        for key, obj in rows:
            if key == _CRD_KEY:
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
        apply_create_defaults(_NS_KEY, obj, self._alloc)
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
        meta["creationTimestamp"] = _timestamp(self._wall())
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
        for ns in spaces:
            b = by_ns[ns]
            for name in sorted(b):
                obj = b[name]
                if not lsel.empty and not lsel.matches_object(obj):
                    continue
                if not fsel.empty and not fsel.matches(obj):
                    continue
                out.append(self._out(info, obj, copy))
        return out, self._rv

    # ----------------------------------------------------------------- create
    async def create(
        self,
        info: ResourceInfo,
        namespace: str | None,
        obj: Obj,
        *,
        dry_run: bool = False,
        copy: bool = True,
    ) -> Obj:
        """Creates an object and returns it as stored.

        Raises:
            StatusError: 409 AlreadyExists, 404 when the namespace is missing, 403 when it is
                terminating, 400 for a malformed body, 422 Invalid (CRD schema, names).
        """
        alias = self._alias(info)
        if alias is not None and isinstance(obj, dict):
            made = await self.create(alias[0], namespace, alias[1](obj), dry_run=dry_run, copy=copy)
            return alias[2](made)
        if copy:
            obj = clone(obj)
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise se.bad_request("the body of the request is not a valid object")
        meta = obj.setdefault("metadata", {})
        ns = self._check_namespace(info, namespace, meta)
        obj["apiVersion"] = info.api_version
        obj["kind"] = info.kind
        self._stamp_new(info, obj)
        if info.has_status:
            obj.pop("status", None)
        if info.is_custom:
            crd_mod.admit_custom(info, obj, None)
        elif info.key == _CRD_KEY:
            crd_mod.validate_crd(obj)
        name = meta.get("name")
        if not name:
            gen = meta.get("generateName")
            if not gen:
                raise se.invalid(
                    info.kind,
                    info.group,
                    "",
                    [
                        (
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
            bucket = self._bucket(info.key, ns)
            for _ in range(8):
                name = gen[:58] + "".join(self._rng.choice(_ALNUM) for _ in range(5))
                if name not in bucket:
                    break
            meta["name"] = name
        elif not isinstance(name, str):
            raise se.bad_request("metadata.name must be a string")
        validate_object_meta(info, obj, check_name=True)
        if self._find(info, ns, name) is not None:
            raise se.already_exists(info.plural, info.group, name)
        apply_create_defaults(info.key, obj, self._alloc)
        if dry_run:
            return clone(obj) if copy else obj
        stored = self._commit(info, "ADDED", ns, name, obj, None)
        if info.key == _CRD_KEY:
            self.resources.register_crd(stored)
        return clone(stored) if copy else stored

    def _check_namespace(self, info: ResourceInfo, namespace: str | None, meta: Obj) -> str:
        if not info.namespaced:
            meta.pop("namespace", None)
            return ""
        body_ns = meta.get("namespace")
        ns = namespace or body_ns or "default"
        if body_ns and namespace and body_ns != namespace:
            raise se.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = ns
        ns_obj = self._objects.get(_NS_KEY, {}).get("", {}).get(ns)
        if ns_obj is None:
            raise se.not_found("namespaces", "", ns)
        if ns_obj["metadata"].get("deletionTimestamp"):
            raise se.forbidden(
                f'{info.kind.lower()} "{meta.get("name") or meta.get("generateName", "")}" is forbidden: '
                f"unable to create new content in namespace {ns} because it is being terminated",
                resource=info.plural,
                group=info.group,
                name=meta.get("name", ""),
            )
        return ns

    # ----------------------------------------------------------------- update
    async def update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> Obj:
        """Replaces an object (PUT), or only its status with ``subresource="status"``.

        A no-op update keeps the RV and emits nothing. Removing the last finalizer of an
        object being deleted deletes it (the DELETED object is returned).

        Raises:
            StatusError: 404, 409 Conflict on a stale RV, 422 Invalid, 400 on name mismatch.
        """
        alias = self._alias(info)
        if alias is not None and isinstance(obj, dict):
            done = await self.update(
                alias[0],
                namespace,
                name,
                alias[1](obj),
                subresource=subresource,
                dry_run=dry_run,
                copy=copy,
            )
            return alias[2](done)
        if copy:
            obj = clone(obj)
        ns = (namespace or "") if info.namespaced else ""
        old = self._find(info, ns, name)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise se.bad_request("metadata is required")
        if meta.get("name", name) != name:
            raise se.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if old is None:
            raise self._not_found(info, name)
        if subresource not in (None, "status") or (subresource and not info.has_status):
            raise se.not_found(f"{info.plural}/{subresource}", info.group, name)
        rv = meta.get("resourceVersion")
        old_meta = old["metadata"]
        if rv:
            if rv != old_meta["resourceVersion"]:
                raise se.conflict(info.plural, info.group, name)
        elif info.is_custom:
            raise se.invalid(
                info.kind,
                info.group,
                name,
                [
                    (
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        new = self._merge_update(info, old, obj, subresource)
        return self._finish_write(info, ns, name, new, old, dry_run=dry_run, copy=copy)

    def _merge_update(self, info: ResourceInfo, old: Obj, obj: Obj, subresource: str | None) -> Obj:
        old_meta = old["metadata"]
        if subresource == "status":
            new = dict(old)
            new["metadata"] = dict(old_meta)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            if info.is_custom:
                crd_mod.admit_custom(info, new, old)
            return new
        new = obj
        meta = new["metadata"]
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "namespace",
            "generation",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta["name"] = old_meta["name"]
        new["apiVersion"] = old.get("apiVersion", info.api_version)
        new["kind"] = info.kind
        if info.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
            if added:
                raise se.invalid(
                    info.kind,
                    info.group,
                    old_meta["name"],
                    [
                        (
                            "metadata.finalizers",
                            "FieldValueForbidden",
                            "Forbidden: no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers {sorted(added)!r}",
                        )
                    ],
                )
        validate_object_meta(info, new, check_name=False)
        if info.is_custom:
            crd_mod.admit_custom(info, new, old)
        elif info.key == _CRD_KEY:
            crd_mod.validate_crd(new)
        apply_update_defaults(info.key, new, old, self._alloc)
        if "generation" in old_meta and _spec_changed(old, new, info.has_status):
            meta["generation"] = old_meta["generation"] + 1
        return new

    def _finish_write(
        self,
        info: ResourceInfo,
        ns: str,
        name: str,
        new: Obj,
        old: Obj,
        *,
        dry_run: bool,
        copy: bool,
    ) -> Obj:
        meta = new["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        if new == old:
            return self._out(info, old, copy)
        if dry_run:
            return clone(new) if copy else new
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._awaits_kubelet(info, new)
        ):
            stored = self._commit(info, "DELETED", ns, name, new, old)
            self._after_delete(info, stored)
        else:
            stored = self._commit(info, "MODIFIED", ns, name, new, old)
            if info.key == _CRD_KEY:
                self.resources.register_crd(stored)
        return clone(stored) if copy else stored

    def _awaits_kubelet(self, info: ResourceInfo, obj: Obj) -> bool:
        """A gracefully deleted pod stays until the kubelet calls finalize_delete."""
        return (
            info.key == "/pods"
            and bool(obj["metadata"].get("deletionGracePeriodSeconds"))
            and self.graceful_pod_deletion
        )

    # ----------------------------------------------------------------- delete
    async def delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
        copy: bool = True,
    ) -> Obj:
        """Deletes an object, or marks it deleting (finalizers, Foreground/Orphan, graceful pods).

        Returns the object: its final state (gone) or its deleting state (still present).

        Raises:
            StatusError: 404, 409 on a failed precondition, 400 for a bad policy.
        """
        alias = self._alias(info)
        if alias is not None:
            gone = await self.delete(
                alias[0],
                namespace,
                name,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
                preconditions=preconditions,
                dry_run=dry_run,
                copy=copy,
            )
            return alias[2](gone)
        ns = (namespace or "") if info.namespaced else ""
        old = self._find(info, ns, name)
        if old is None:
            raise self._not_found(info, name)
        old_meta = old["metadata"]
        self._check_preconditions(info, old_meta, preconditions)
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise se.bad_request(f"unsupported propagationPolicy {propagation_policy!r}")
        finalizers = list(old_meta.get("finalizers") or ())
        extra = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(
            propagation_policy or ""
        )
        if extra and extra not in finalizers and not old_meta.get("deletionTimestamp"):
            finalizers.append(extra)
        grace = self._grace_period(info, old, grace_period_seconds)
        if info.key == _NS_KEY:
            return await self._delete_namespace(info, old, dry_run=dry_run, copy=copy)
        if not finalizers and grace == 0:
            if dry_run:
                return self._out(info, old, copy)
            stored = self._commit(info, "DELETED", ns, name, old, old)
            self._after_delete(info, stored)
            return self._out(info, stored, copy)
        new = dict(old)
        meta = new["metadata"] = dict(old_meta)
        if finalizers:
            meta["finalizers"] = finalizers
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = _timestamp(self._wall() + grace)
            meta["deletionGracePeriodSeconds"] = grace
            if "generation" in meta:
                meta["generation"] += 1
        elif grace < (meta.get("deletionGracePeriodSeconds") or 0):
            meta["deletionGracePeriodSeconds"] = grace
        return self._finish_write(info, ns, name, new, old, dry_run=dry_run, copy=copy)

    def _grace_period(self, info: ResourceInfo, obj: Obj, requested: int | None) -> int:
        if info.key != "/pods" or not self.graceful_pod_deletion:
            return 0
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(0, int(requested))
        return int(spec.get("terminationGracePeriodSeconds", 30))

    def _check_preconditions(
        self, info: ResourceInfo, meta: Obj, preconditions: Mapping[str, Any] | None
    ) -> None:
        if not preconditions:
            return
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            want = preconditions.get(field)
            if want and want != meta.get(field):
                raise se.conflict(
                    info.plural,
                    info.group,
                    meta["name"],
                    f"Precondition failed: {label} in precondition: {want}, "
                    f"{label} in object meta: {meta.get(field)}",
                )

    async def finalize_delete(self, info: ResourceInfo, namespace: str | None, name: str) -> bool:
        """Removes an object that is being deleted once it has no finalizers (kubelet/GC hook).

        Returns True when the object is gone (or was already), False when finalizers keep it.
        """
        ns = (namespace or "") if info.namespaced else ""
        old = self._find(info, ns, name)
        if old is None:
            return True
        if old["metadata"].get("finalizers"):
            return False
        stored = self._commit(info, "DELETED", ns, name, old, old)
        self._after_delete(info, stored)
        return True

    def _after_delete(self, info: ResourceInfo, obj: Obj) -> None:
        if info.key == _CRD_KEY:
            self._drop_crd(obj)
        ns = obj["metadata"].get("namespace")
        if ns and info.namespaced:
            ns_obj = self._objects.get(_NS_KEY, {}).get("", {}).get(ns)
            if ns_obj is not None and ns_obj["metadata"].get("deletionTimestamp"):
                self._maybe_finish_namespace(ns_obj)

    def _drop_crd(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        infos = self.resources.crd_infos(name)
        for info in infos[:1]:
            for obj in list(self.iter_objects(info)):
                m = obj["metadata"]
                self._commit(info, "DELETED", m.get("namespace", ""), m["name"], obj, obj)
        self.resources.unregister_crd(name)

    async def _delete_namespace(
        self, info: ResourceInfo, old: Obj, *, dry_run: bool, copy: bool
    ) -> Obj:
        if dry_run:
            return self._out(info, old, copy)
        name = old["metadata"]["name"]
        if not old["metadata"].get("deletionTimestamp"):
            new = dict(old)
            new["metadata"] = dict(
                old["metadata"],
                deletionTimestamp=_timestamp(self._wall()),
                deletionGracePeriodSeconds=0,
            )
            new["status"] = {"phase": "Terminating"}
            old = self._commit(info, "MODIFIED", "", name, new, old)
        for key, by_ns in list(self._objects.items()):
            res = self.resources.by_key(key)
            if res is None or not res.namespaced:
                continue
            for obj in list((by_ns.get(name) or {}).values()):
                with contextlib.suppress(se.StatusError):
                    await self.delete(res, name, obj["metadata"]["name"], copy=False)
        ns_obj = self._find(info, "", name)
        if ns_obj is not None:
            self._maybe_finish_namespace(ns_obj)
            ns_obj = self._find(info, "", name) or ns_obj
        return self._out(info, ns_obj or old, copy)

    def _maybe_finish_namespace(self, ns_obj: Obj) -> None:
        name = ns_obj["metadata"]["name"]
        for by_ns in self._objects.values():
            if by_ns.get(name):
                return
        info = self.resources.get("", "v1", "namespaces")
        assert info is not None
        self._commit(info, "DELETED", "", name, ns_obj, ns_obj)

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
                initial = list(_drain(watcher))
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


def _drain(w: Watcher) -> Iterator[Event]:
    while w.pending():
        ev = w._buffer.popleft()
        yield ev


def _spec_changed(old: Obj, new: Obj, has_status: bool) -> bool:
    skip = {"metadata", "status"} if has_status else {"metadata"}
    keys = (set(old) | set(new)) - skip
    return any(old.get(k) != new.get(k) for k in keys)


def _loop_time() -> float:
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return 0.0
