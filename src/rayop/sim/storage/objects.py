"""The object table: every stored object, the one global resourceVersion and the change feed.

Single-threaded asyncio. Stored objects are never mutated in place: every commit replaces the
dict, so change-feed callbacks, watch events and list snapshots may share references safely.
The table knows nothing of admission or deletion semantics; the write and delete paths decide
what to commit and :meth:`ObjectTable.commit` records it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import orjson

from rayop.apimachinery.labels import LabelSelector, SelectorError, parse_label_selector
from rayop.apimachinery.objects import Obj
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.field_selectors import FieldSelector, parse_field_selector
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry

__all__ = [
    "CRD_KEY",
    "NS_KEY",
    "Obj",
    "ObjectTable",
    "Persistence",
    "Subscriber",
    "clone",
    "output",
    "parse_selectors",
]

Subscriber = Callable[[str, ResourceInfo, Obj, "Obj | None"], None]
"""A change-feed callback: ``(event_type, info, obj, old_obj)``; see :meth:`ObjectTable.subscribe`."""

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
NS_KEY = "/namespaces"


def clone(obj: Any) -> Any:
    """Returns a deep copy of a JSON-like value (via orjson, faster than copy.deepcopy)."""
    return orjson.loads(orjson.dumps(obj))


def output(info: ResourceInfo, obj: Obj, copy: bool) -> Obj:
    """Returns ``obj`` as served by ``info`` (its apiVersion), a private copy when ``copy``."""
    if obj.get("apiVersion") != info.api_version:
        obj = dict(obj)
        obj["apiVersion"] = info.api_version
    return clone(obj) if copy else obj


def parse_selectors(
    label_selector: str | LabelSelector | None, field_selector: str | FieldSelector | None
) -> tuple[LabelSelector, FieldSelector]:
    """Returns both selectors parsed (parsed ones pass through).

    Raises:
        StatusError: 400 BadRequest for an unparsable selector.
    """
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


class Persistence(Protocol):
    """Durable storage of the table's objects (see rayop.sim.storage.sqlite)."""

    def load(self) -> tuple[int, list[tuple[str, Obj]]]:
        """Returns the last RV and every stored ``(resource key, object)``."""
        ...

    def write(self, rv: int, key: str, namespace: str, name: str, obj: Obj | None) -> None:
        """Durably stores (or, with obj None, removes) one object at ``rv`` (blocks briefly)."""
        ...


class ObjectTable:
    """Holds the objects by resource key, namespace and name; owns the RV and the change feed.

    Args:
        resources: The served resources; CRDs found by :meth:`load` are registered in it.
        persistence: Durable storage that every commit is written to before it returns.

    Attributes:
        rv: The newest resourceVersion (0 before any write); inside a change-feed callback it
            is the RV of the change being delivered.
        base_rv: The RV loaded from persistence: no watch history exists at or before it.
    """

    def __init__(self, resources: ResourceRegistry, *, persistence: Persistence | None) -> None:
        self.resources = resources
        self.rv = 0
        self.base_rv = 0
        self._persistence = persistence
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._subscribers: list[Subscriber] = []

    def load(self) -> None:
        """Fills the empty table from its persistence (CRDs first, so they serve their kinds)."""
        if self._persistence is None:
            return
        rv, rows = self._persistence.load()
        rows.sort(key=lambda r: r[0] != CRD_KEY)
        for key, obj in rows:
            if key == CRD_KEY:
                self.resources.register_crd(obj)
            meta = obj["metadata"]
            self.bucket(key, meta.get("namespace", ""))[meta["name"]] = obj
        self.rv = rv
        self.base_rv = rv

    # ----------------------------------------------------------------- change feed
    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Registers a synchronous change-feed callback; returns a function that unregisters it.

        The callback gets ``(event_type, info, obj, old_obj)`` for every committed change
        (ADDED, MODIFIED, DELETED) of every resource, in RV order, before the write returns.
        ``obj`` and ``old_obj`` are the table's own (shared) dicts: treat them as read-only and
        copy (:func:`clone`) before changing anything. The callback must not block; schedule
        tasks for follow-up writes.
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def commit(
        self,
        info: ResourceInfo,
        type_: str,
        namespace: str,
        name: str,
        obj: Obj,
        old: Obj | None,
    ) -> Obj:
        """Assigns the next RV, stores (or removes) ``obj`` and feeds the change to subscribers.

        Returns the stored object (for DELETED, the last state with the new RV).
        """
        self.rv += 1
        rv = self.rv
        key = info.key
        deleted = type_ == "DELETED"
        if deleted:
            obj = dict(obj)
            obj["metadata"] = dict(obj["metadata"])
        obj["metadata"]["resourceVersion"] = str(rv)
        bucket = self.bucket(key, namespace)
        if deleted:
            bucket.pop(name, None)
        else:
            bucket[name] = obj
        if self._persistence is not None:
            self._persistence.write(rv, key, namespace, name, None if deleted else obj)
        for cb in list(self._subscribers):
            cb(type_, info, obj, old)
        return obj

    # ----------------------------------------------------------------- reads
    def bucket(self, key: str, namespace: str) -> dict[str, Obj]:
        """Returns the live name -> object dict of one resource key and namespace (made if absent)."""
        by_ns = self._objects.get(key)
        if by_ns is None:
            by_ns = self._objects[key] = {}
        b = by_ns.get(namespace)
        if b is None:
            b = by_ns[namespace] = {}
        return b

    def find(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        """Returns the stored object (shared, read-only) or None."""
        ns = (namespace or "") if info.namespaced else ""
        by_ns = self._objects.get(info.key)
        if by_ns is None:
            return None
        b = by_ns.get(ns)
        return None if b is None else b.get(name)

    def namespace(self, name: str) -> Obj | None:
        """Returns the stored Namespace object called ``name``, or None."""
        return self._objects.get(NS_KEY, {}).get("", {}).get(name)

    def resource_keys(self) -> list[str]:
        """Returns every resource key that has (or had) objects."""
        return list(self._objects)

    def in_namespace(self, key: str, namespace: str) -> list[Obj]:
        """Returns a snapshot of one resource key's objects in one namespace."""
        return list((self._objects.get(key, {}).get(namespace) or {}).values())

    def namespace_empty(self, namespace: str) -> bool:
        """Tells whether no resource holds an object in ``namespace`` any more."""
        return not any(by_ns.get(namespace) for by_ns in self._objects.values())

    def iter_objects(self, info: ResourceInfo, namespace: str | None = None) -> Iterator[Obj]:
        """Iterates over stored objects (read-only, unsorted) of one resource."""
        by_ns = self._objects.get(info.key) or {}
        if namespace is not None and info.namespaced:
            yield from list((by_ns.get(namespace) or {}).values())
            return
        for b in list(by_ns.values()):
            yield from list(b.values())

    def list(
        self,
        info: ResourceInfo,
        namespace: str | None,
        lsel: LabelSelector,
        fsel: FieldSelector,
        *,
        copy: bool,
    ) -> tuple[list[Obj], int]:
        """Returns the matching objects sorted by namespace and name, and the current RV."""
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
                    obj = output(info, obj, copy)
                out.append(obj)
        return out, self.rv
