"""The informer cache: objects keyed ``namespace/name`` with named secondary indexes.

The store is used from one event loop only, so it takes no locks. Objects are frozen on the way in
(:func:`rayop.runtime.frozen.freeze`), so every object it hands out is read-only and can be
shared without copying.

Index functions map an object to the list of index values it is filed under
(controller-machinery.md I7). :data:`NAMESPACE_INDEX` and :data:`OWNER_UID_INDEX` (the UID of the
controlling owner reference) are installed by default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rayop.runtime.frozen import freeze

Obj = Mapping[str, Any]
"""A cached object: a read-only mapping of the object's JSON."""

IndexFunc = Callable[[Obj], list[str]]
"""Maps an object to the index values it is filed under."""

NAMESPACE_INDEX = "namespace"
OWNER_UID_INDEX = "owner-uid"


def object_key(obj: Obj) -> str:
    """Returns ``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def make_key(namespace: str | None, name: str) -> str:
    """Returns the store key of the object ``name`` in ``namespace`` (None for cluster scope)."""
    return f"{namespace}/{name}" if namespace else name


def index_by_namespace(obj: Obj) -> list[str]:
    """Files an object under its namespace ("" for cluster-scoped objects)."""
    return [(obj.get("metadata") or {}).get("namespace") or ""]


def controller_owner(obj: Obj) -> Mapping[str, Any] | None:
    """Returns the owner reference with ``controller: true``, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def index_by_owner_uid(obj: Obj) -> list[str]:
    """Files an object under the UID of its controlling owner, if it has one."""
    ref = controller_owner(obj)
    return [ref["uid"]] if ref is not None and ref.get("uid") else []


DEFAULT_INDEXERS: Mapping[str, IndexFunc] = {
    NAMESPACE_INDEX: index_by_namespace,
    OWNER_UID_INDEX: index_by_owner_uid,
}


class Indexer:
    """Keeps the latest state of each object and its index entries; never blocks."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._index_funcs: dict[str, IndexFunc] = dict(DEFAULT_INDEXERS)
        self._indices: dict[str, dict[str, set[str]]] = {}
        for name, func in (indexers or {}).items():
            self._index_funcs[name] = func
        for name in self._index_funcs:
            self._indices[name] = {}

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Installs more index functions and indexes the objects already stored.

        Raises:
            ValueError: an index of that name already exists.
        """
        for name, func in indexers.items():
            if name in self._index_funcs:
                raise ValueError(f"indexer {name!r} already exists")
            self._index_funcs[name] = func
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._file(name, func, key, obj)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str) -> Obj | None:
        """Returns the object stored under ``key``, or None."""
        return self._items.get(key)

    def __iter__(self) -> Iterator[str]:
        """Iterates over the stored keys (do not mutate the store while iterating)."""
        return iter(self._items)

    def values(self) -> Iterator[Obj]:
        """Iterates over the stored objects (do not mutate the store while iterating)."""
        return iter(self._items.values())

    def by_index(self, index: str, value: str) -> list[Obj]:
        """Returns the objects filed under ``value`` in the index ``index``.

        Raises:
            KeyError: there is no index of that name.
        """
        keys = self._indices[index].get(value, ())
        return [self._items[k] for k in keys]

    def index_keys(self, index: str, value: str) -> set[str]:
        """Returns a copy of the keys filed under ``value`` in ``index``."""
        return set(self._indices[index].get(value, ()))

    def put(self, obj: Obj) -> tuple[Obj, Obj | None]:
        """Freezes and stores ``obj`` under its key; returns (stored object, previous object)."""
        frozen: Obj = freeze(obj)
        key = object_key(frozen)
        old = self._items.get(key)
        if old is not None:
            self._unfile(key, old)
        self._items[key] = frozen
        self._file_all(key, frozen)
        return frozen, old

    def remove(self, key: str) -> Obj | None:
        """Removes the object stored under ``key``; returns it, or None if there was none."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unfile(key, old)
        return old

    def _file_all(self, key: str, obj: Obj) -> None:
        for name, func in self._index_funcs.items():
            self._file(name, func, key, obj)

    def _file(self, name: str, func: IndexFunc, key: str, obj: Obj) -> None:
        index = self._indices[name]
        for value in func(obj):
            bucket = index.get(value)
            if bucket is None:
                index[value] = {key}
            else:
                bucket.add(key)

    def _unfile(self, key: str, obj: Obj) -> None:
        for name, func in self._index_funcs.items():
            index = self._indices[name]
            for value in func(obj):
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]
