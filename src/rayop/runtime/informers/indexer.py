"""The informer cache: objects keyed ``namespace/name`` with named secondary indexes.

The store is used from one event loop only, so it takes no locks. To keep tens of thousands of
objects in little memory, each object is stored compactly (:mod:`rayop.runtime.informers.compact_store`,
about 200 bytes for a typical pod instead of 14 to 23 KB of Python objects) next to the
few fields reads filter on (resourceVersion and labels, strings interned). Reads decode the object
into a read-only tree (:func:`rayop.runtime.informers.frozen.freeze_json`, about 70 µs for a pod); a small
LRU of decoded objects makes repeated reads of the same object (a handler, then a reconcile) cheap
and hands out the very object that was last stored. A stored object is encoded only when it
leaves that LRU, so the versions an object goes through in quick succession (a new pod is
created, bound, started and ready within seconds) are not each compressed, and the previous
version a store hands to the update handlers is read without decoding. Every object handed out
is read-only; two reads of one object give equal values, not necessarily the same Python object.

Index functions map an object to the list of index values it is filed under (as in client-go's
``tools/cache/thread_safe_store.go``). :data:`NAMESPACE_INDEX` and :data:`OWNER_UID_INDEX` (the UID
of the controlling owner reference) are installed by default. A label key that a selector asks for
by value (``app=NAME``) gets an index of its own on first use (:meth:`Indexer.list_selected`), so a
labelled list costs the objects that carry the label, not every object of the namespace.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from rayop.apimachinery.labels import LabelSelector
from rayop.apimachinery.objects import ObjView
from rayop.runtime.informers.compact_store import ObjectCodec
from rayop.runtime.informers.frozen import FrozenDict, freeze_decoded, freeze_json

Obj = ObjView
"""A cached object: a read-only mapping of the object's JSON (kept importable from here)."""

IndexFunc = Callable[[Obj], list[str]]
"""Maps an object to the index values it is filed under."""

NAMESPACE_INDEX = "namespace"
OWNER_UID_INDEX = "owner-uid"

DEFAULT_DECODED_CACHE_SIZE = 64
"""How many decoded objects an :class:`Indexer` keeps for repeated reads (and new versions not
yet compressed). 256 cost a converged operator 2 MiB more at 3,000 RayClusters x 3 workers, and
no less CPU (131 s either way, 128 s at 16; in-process, ``benchmarks/operator_memory_profile.py``
with the size patched): a pass reads its cluster's pods once (``PassContext.cluster_pods``), so
the cache serves repeated reads within a pass, which a few dozen entries cover."""

MAX_LABEL_INDEXES = 16
"""How many label keys an :class:`Indexer` indexes by value, at most (built on first use)."""

LabelsPredicate = Callable[[Mapping[str, str] | None], bool]
"""Tells whether an object with these labels (None when it has none) is wanted."""


def object_key(obj: Obj) -> str:
    """Returns ``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def resource_version(obj: Obj) -> str:
    """Returns ``metadata.resourceVersion`` ("" if unset)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


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


class _Entry(NamedTuple):
    """One stored object: its compact blob and the fields reads filter on."""

    blob: bytes | None
    """None while the object is among the decoded ones and has not been encoded yet."""
    resource_version: str
    labels: Mapping[str, str] | None


def _interned_labels(labels: Any, server_only: frozenset[str]) -> Mapping[str, str] | None:
    if not labels or not isinstance(labels, Mapping):
        return None
    kept = {sys.intern(str(k)): sys.intern(str(v)) for k, v in labels.items() if k not in server_only}
    return FrozenDict(kept) if kept else None


class Indexer:
    """Keeps the latest state of each object and its index entries; never blocks.

    Args:
        indexers: Extra named index functions (namespace and owner UID are always installed).
        decoded_cache_size: How many decoded objects to keep for repeated reads (at least 1).
        server_only_labels: Label keys that only the API server selects on (the informer's
            own selector): the store keeps no copy of them beside each object's blob, so a
            label whose value is unique per object, or the same in every object, costs no
            memory twice. A read that selects on one still gets the right objects: each
            candidate is decoded and its labels tested.
    """

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        decoded_cache_size: int = DEFAULT_DECODED_CACHE_SIZE,
        server_only_labels: frozenset[str] = frozenset(),
    ) -> None:
        self._server_only = server_only_labels
        self._entries: dict[str, _Entry] = {}
        self._codec = ObjectCodec()
        self._decoded: OrderedDict[str, Obj] = OrderedDict()
        self._decoded_size = max(1, decoded_cache_size)
        self._index_funcs: dict[str, IndexFunc] = dict(DEFAULT_INDEXERS)
        self._indices: dict[str, dict[str, set[str]]] = {}
        for name, func in (indexers or {}).items():
            self._index_funcs[name] = func
        for name in self._index_funcs:
            self._indices[name] = {}
        self._label_indices: dict[str, dict[str, set[str]]] = {}
        self._changes = 0

    @property
    def changes(self) -> int:
        """How many times an object was stored or removed: equal values mean equal contents, so
        a reader may keep what it derived from the cache while this stays the same."""
        return self._changes

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Installs more index functions and indexes the objects already stored.

        Decodes every stored object once.

        Raises:
            ValueError: an index of that name already exists.
        """
        for name in indexers:
            if name in self._index_funcs:
                raise ValueError(f"indexer {name!r} already exists")
        for name, func in indexers.items():
            self._index_funcs[name] = func
            self._indices[name] = {}
        for key, entry in self._entries.items():
            obj = self._load(key, entry, remember=False)
            for name, func in indexers.items():
                self._file(name, func, key, obj)

    def __len__(self) -> int:
        return len(self._entries)

    def stored_bytes(self) -> int:
        """Returns the total size of the compact encodings (for diagnostics); encodes the
        objects stored since they were last read that are not encoded yet."""
        for key in [k for k, entry in self._entries.items() if entry.blob is None]:
            self._encode(key, self._decoded[key])
        return sum(len(entry.blob or b"") for entry in self._entries.values())

    @property
    def dictionary_generations(self) -> int:
        """How many dictionaries the compact encoding has learned (for diagnostics)."""
        return self._codec.generations

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> Obj | None:
        """Returns the object stored under ``key``, or None."""
        entry = self._entries.get(key)
        return None if entry is None else self._load(key, entry, remember=True)

    def get_quietly(self, key: str) -> Obj | None:
        """Like :meth:`get`, but a decoded object is not kept for later reads (for full scans)."""
        entry = self._entries.get(key)
        return None if entry is None else self._load(key, entry, remember=False)

    def resource_version(self, key: str) -> str | None:
        """Returns the resourceVersion of the object stored under ``key`` (None if absent)."""
        entry = self._entries.get(key)
        return None if entry is None else entry.resource_version

    def __iter__(self) -> Iterator[str]:
        """Iterates over the stored keys (do not mutate the store while iterating)."""
        return iter(self._entries)

    def values(self) -> Iterator[Obj]:
        """Iterates over the stored objects, decoding each (a snapshot of the keys is taken;
        an object removed meanwhile is skipped)."""
        for key in list(self._entries):
            entry = self._entries.get(key)
            if entry is not None:
                yield self._load(key, entry, remember=False)

    def select(self, keys: Iterable[str] | None, labels: LabelsPredicate | None) -> list[Obj]:
        """Returns the objects among ``keys`` (all if None) whose labels ``labels`` accepts.

        Labels are tested before decoding, so only the objects returned are decoded.
        """
        entries = self._entries
        chosen = [
            (key, entry)
            for key in (entries if keys is None else keys)
            if (entry := entries.get(key)) is not None and (labels is None or labels(entry.labels))
        ]
        remember = len(chosen) <= self._decoded_size // 4
        return [self._load(key, entry, remember=remember) for key, entry in chosen]

    def by_index(self, index: str, value: str, labels: LabelsPredicate | None = None) -> list[Obj]:
        """Returns the objects filed under ``value`` in ``index`` (whose labels ``labels`` accepts).

        Raises:
            KeyError: there is no index of that name.
        """
        return self.select(self._indices[index].get(value, ()), labels)

    def list_selected(self, namespace: str | None, selector: LabelSelector) -> list[Obj]:
        """Returns the objects in ``namespace`` (all if None) whose labels ``selector`` accepts.

        The candidates are the smallest of: the namespace's objects, and for each requirement
        that names its values (``k=v``, ``k in (a,b)``), the objects with one of those values
        under an index of that label key (built on first use, at most
        :data:`MAX_LABEL_INDEXES` keys). Only the objects returned are decoded.
        """
        if any(r.key in self._server_only for r in selector.requirements):
            return self._list_decoded(namespace, selector)
        in_namespace: set[str] | None = None
        if namespace is not None:
            in_namespace = self._indices[NAMESPACE_INDEX].get(namespace, set())
        candidates: Iterable[str] | None = in_namespace
        size = len(self._entries) if in_namespace is None else len(in_namespace)
        for requirement in selector.requirements:
            if requirement.op != "in" or size == 0:
                continue
            by_value = self._label_index(requirement.key)
            if by_value is None:
                continue
            buckets = [b for v in requirement.values if (b := by_value.get(v))]
            found = sum(len(b) for b in buckets)
            if found < size:
                size = found
                candidates = [key for bucket in buckets for key in bucket]
        if candidates is not in_namespace and in_namespace is not None:
            candidates = [key for key in candidates or () if key in in_namespace]
        return self.select(candidates, selector.matches)

    def _list_decoded(self, namespace: str | None, selector: LabelSelector) -> list[Obj]:
        """:meth:`list_selected` for a selector naming a server-only label: decodes every
        object of ``namespace`` (all if None) and tests its labels."""
        keys = self._entries if namespace is None else self._indices[NAMESPACE_INDEX].get(namespace, ())
        return [
            obj
            for key in list(keys)
            if (obj := self.get_quietly(key)) is not None
            and selector.matches((obj.get("metadata") or {}).get("labels"))
        ]

    def _label_index(self, label: str) -> dict[str, set[str]] | None:
        """Returns the index of ``label`` by value, building it on first use (None: too many)."""
        index = self._label_indices.get(label)
        if index is None and len(self._label_indices) < MAX_LABEL_INDEXES:
            index = {}
            for key, entry in self._entries.items():
                value = entry.labels.get(label) if entry.labels else None
                if value is not None:
                    index.setdefault(value, set()).add(key)
            self._label_indices[label] = index
        return index

    def _file_labels(self, key: str, labels: Mapping[str, str] | None, *, add: bool) -> None:
        if not labels:
            return
        for label, index in self._label_indices.items():
            value = labels.get(label)
            if value is None:
                continue
            if add:
                index.setdefault(value, set()).add(key)
            elif (bucket := index.get(value)) is not None:
                bucket.discard(key)
                if not bucket:
                    del index[value]

    def put(self, obj: Obj, *, owned: bool = False) -> tuple[Obj, Obj | None]:
        """Stores a read-only copy of ``obj`` under its key; returns (stored copy, previous).

        The copy joins the decoded objects and is encoded only when it leaves them: an object
        that changes again soon (a new pod: created, bound, started, ready within seconds) has
        only its lasting version compressed, and its previous version is read without decoding.

        Args:
            obj: The object.
            owned: The caller hands ``obj`` over, fresh from the JSON decoder and held by no
                one else (an informer's watch event or LIST item): its dicts and lists become
                the read-only tree's scratch (:func:`~rayop.runtime.informers.frozen.freeze_decoded`,
                about a third cheaper than a copy), and it may only be read afterwards.
        """
        self._changes += 1
        frozen: Obj = freeze_decoded(obj) if owned else freeze_json(obj)
        key = object_key(frozen)
        meta = frozen.get("metadata") or {}
        entry = _Entry(
            None,
            str(meta.get("resourceVersion") or ""),
            _interned_labels(meta.get("labels"), self._server_only),
        )
        old_entry = self._entries.get(key)
        old = None if old_entry is None else self._load(key, old_entry, remember=False)
        if old is not None:
            self._unfile(key, old)
        if old_entry is not None:
            self._file_labels(key, old_entry.labels, add=False)
        self._entries[key] = entry
        self._file_all(key, frozen)
        self._file_labels(key, entry.labels, add=True)
        self._remember(key, frozen)
        return frozen, old

    def remove(self, key: str) -> Obj | None:
        """Removes the object stored under ``key``; returns it, or None if there was none."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._changes += 1
        old = self._load(key, entry, remember=False)
        del self._entries[key]
        self._decoded.pop(key, None)
        self._unfile(key, old)
        self._file_labels(key, entry.labels, add=False)
        return old

    def _load(self, key: str, entry: _Entry, *, remember: bool) -> Obj:
        obj = self._decoded.get(key)
        if obj is not None:
            self._decoded.move_to_end(key)
            return obj
        blob = entry.blob
        if blob is None:  # it left the decoded (and was encoded) since the caller looked it up
            blob = self._entries[key].blob
        assert blob is not None, f"{key}: neither encoded nor among the decoded objects"
        obj = self._codec.decode(blob)
        if remember:
            self._remember(key, obj)
        return obj

    def _remember(self, key: str, obj: Obj) -> None:
        decoded = self._decoded
        decoded[key] = obj
        decoded.move_to_end(key)
        if len(decoded) > self._decoded_size:
            old_key, old_obj = decoded.popitem(last=False)
            entry = self._entries.get(old_key)
            if entry is not None and entry.blob is None:
                self._encode(old_key, old_obj)

    def _encode(self, key: str, obj: Obj) -> None:
        """Gives the stored object under ``key`` its compact blob (it is leaving the decoded)."""
        self._entries[key] = self._entries[key]._replace(blob=self._codec.encode(obj))

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
