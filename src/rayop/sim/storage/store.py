"""The object store of the embedded API server: one facade over its composed parts.

:class:`Store` is the class to instantiate. It owns

- an :class:`~rayop.sim.storage.objects.ObjectTable` (objects, the resourceVersion, the change
  feed; optional persistence),
- a :class:`~rayop.sim.storage.watch_hub.WatchHub` (watch history and live streams),
- a :class:`~rayop.sim.storage.write_path.WritePath` (create and update with admission),
- a :class:`~rayop.sim.storage.delete_path.DeletePath` (finalizers, graceful and cascading
  deletion),

and serves aliased resources (:mod:`rayop.sim.storage.aliases`) by converting on the way in and
out. Single-threaded asyncio; stored objects are never mutated in place, and public methods copy
objects in and out unless called with ``copy=False`` (the HTTP layer, which only serialises).
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypedDict, TypeVar, Unpack, overload

from rayop.apimachinery.labels import LabelSelector
from rayop.apimachinery.objects import Obj
from rayop.sim.admission.defaults import IpAllocator
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.field_selectors import FieldSelector
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry
from rayop.sim.storage.aliases import find_alias
from rayop.sim.storage.delete_path import DeletePath
from rayop.sim.storage.objects import (
    ObjectTable,
    Persistence,
    Subscriber,
    clone,
    output,
    parse_selectors,
)
from rayop.sim.storage.watch_events import WatchStream
from rayop.sim.storage.watch_hub import WatchHub, copied_events
from rayop.sim.storage.webhook_admission import VALIDATING_WEBHOOK_CONFIGURATIONS as WEBHOOKS
from rayop.sim.storage.webhook_admission import WebhookAdmission
from rayop.sim.storage.write_path import WritePath

__all__ = ["DEFAULT_NAMESPACES", "Expired", "Persistence", "Store", "Subscriber", "clone"]

Expired = se.StatusError  # a 410 StatusError; kept as a name for readers of the API
_Part = TypeVar("_Part")
_P = ParamSpec("_P")
_R = TypeVar("_R")
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class WatchSelection(TypedDict, total=False):
    """Where a watch starts and what it selects (the keyword arguments of ``open_watch``)."""

    resource_version: str | None
    label_selector: str | LabelSelector | None
    field_selector: str | FieldSelector | None


class _Forward(Generic[_Part, _P, _R]):
    """A facade attribute that is the method of one of its parts (typed, documented as it)."""

    def __init__(self, method: Callable[Concatenate[_Part, _P], _R], part: str) -> None:
        self._name = method.__name__
        self._part = part
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Forward[_Part, _P, _R]: ...
    @overload
    def __get__(self, obj: object, owner: type[Any]) -> Callable[_P, _R]: ...
    def __get__(
        self, obj: object | None, owner: type[Any]
    ) -> _Forward[_Part, _P, _R] | Callable[_P, _R]:
        if obj is None:
            return self
        bound: Callable[_P, _R] = getattr(getattr(obj, self._part), self._name)
        return bound


class Store:
    """In-memory objects with a global resourceVersion, watch history and a change feed.

    Reads and watches are served here (aliased resources converted); ``subscribe`` and
    ``iter_objects`` are the object table's, ``create`` and ``update`` the write path's,
    ``delete`` and ``finalize_delete`` the delete path's methods.

    Args:
        registry: Served resources (a fresh one with the built-ins by default).
        persistence: Durable storage; when given, its contents are loaded now.
        history_size: Events kept per resource for watches; older RVs get 410 Expired.
        graceful_pod_deletion: When True, deleting a scheduled pod with a grace period only
            sets deletionTimestamp, and the kubelet finishes it with :meth:`finalize_delete`.
        wall_clock: Returns Unix time for creationTimestamp/deletionTimestamp.
        seed: Seed for generateName suffixes and node ports (random when None).
        extended_resource_toleration: Run the ExtendedResourceToleration admission plugin
            (pods requesting an extended resource tolerate the taint named after it).
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
        extended_resource_toleration: bool = False,
    ) -> None:
        self.resources = registry or ResourceRegistry()
        if self.resources.get("admissionregistration.k8s.io", "v1", WEBHOOKS.plural) is None:
            self.resources.register(WEBHOOKS)
        rng = random.Random(seed)
        ips = IpAllocator(rng=rng)
        self._table = ObjectTable(self.resources, persistence=persistence)
        self._watches = WatchHub(self._table, history_size=history_size)
        self._deletes = DeletePath(
            self._table, wall_clock=wall_clock, graceful_pod_deletion=graceful_pod_deletion
        )
        self.webhooks = WebhookAdmission(self._table)
        """The validating webhooks (set ``resolve_service`` to reach Service-addressed ones)."""
        self._writes = WritePath(
            self._table,
            self._deletes,
            wall_clock=wall_clock,
            rng=rng,
            ips=ips,
            admission=self.webhooks,
            extended_resource_toleration=extended_resource_toleration,
        )
        self._table.load()
        services = self.resources.get("", "v1", "services")
        assert services is not None
        for svc in self._table.iter_objects(services):
            ips.note_used(svc)
        for ns in DEFAULT_NAMESPACES:
            self._writes.seed_namespace(ns)

    @property
    def graceful_pod_deletion(self) -> bool:
        """Whether deleting a scheduled pod waits for the kubelet (see the constructor)."""
        return self._deletes.graceful_pod_deletion

    # ----------------------------------------------------------------- change feed
    def current_rv(self) -> int:
        """Returns the newest resourceVersion (0 before any write)."""
        return self._table.rv

    subscribe = _Forward(ObjectTable.subscribe, "_table")

    # ----------------------------------------------------------------- reads
    async def get(
        self, info: ResourceInfo, namespace: str | None, name: str, *, copy: bool = True
    ) -> Obj:
        """Returns the named object.

        Raises:
            StatusError: 404 NotFound.
        """
        alias = find_alias(self.resources, info)
        if alias is not None:
            return alias.out(await self.get(alias.stored, namespace, name, copy=copy))
        obj = self._table.find(info, namespace, name)
        if obj is None:
            raise se.not_found(info.plural, info.group, name)
        return output(info, obj, copy)

    def peek(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        """Returns the stored object without copying (read-only!), or None. Never blocks."""
        alias = find_alias(self.resources, info)
        if alias is not None:
            found = self._table.find(alias.stored, namespace, name)
            return None if found is None else alias.out(found)
        return self._table.find(info, namespace, name)

    iter_objects = _Forward(ObjectTable.iter_objects, "_table")

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
        alias = find_alias(self.resources, info)
        if alias is not None:
            items, rv = self.list(alias.stored, namespace, label_selector=label_selector, copy=copy)
            fs = parse_selectors(None, field_selector)[1]
            return [o for o in map(alias.out, items) if fs.empty or fs.matches(o)], rv
        lsel, fsel = parse_selectors(label_selector, field_selector)
        return self._table.list(info, namespace, lsel, fsel, copy=copy)

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
        """Opens a watch stream of shared, read-only events (never blocks).

        ``resource_version`` None, "" or "0" starts with synthetic ADDED events of the current
        state; otherwise the stream replays every change after that RV.

        Raises:
            StatusError: 410 Expired when the RV is older than the retained history; 400 for a
                malformed RV or selector.
        """
        alias = find_alias(self.resources, info)
        stored, convert = (info, None) if alias is None else (alias.stored, alias.out)
        if alias is not None:
            field_selector = None
        lsel, fsel = parse_selectors(label_selector, field_selector)
        return self._watches.open(
            stored,
            namespace,
            resource_version=resource_version,
            lsel=lsel,
            fsel=fsel,
            shown=info,
            convert=convert,
        )

    def watch(
        self,
        info: ResourceInfo,
        namespace: str | None = None,
        *,
        bookmark_interval: float | None = None,
        **selection: Unpack[WatchSelection],
    ) -> AsyncGenerator[tuple[str, Obj], None]:
        """Returns an async iterator of ``(event_type, obj_copy)`` (see :meth:`open_watch`).

        With ``bookmark_interval`` a BOOKMARK is yielded after that many idle seconds.
        Use ``async for t, obj in store.watch(...)``; close with ``aclose()``.

        Raises:
            StatusError: 410 Expired (raised here, before iteration).
        """
        return copied_events(self.open_watch(info, namespace, **selection), bookmark_interval)

    # ----------------------------------------------------------------- writes
    create = _Forward(WritePath.create, "_writes")
    update = _Forward(WritePath.update, "_writes")
    delete = _Forward(DeletePath.delete, "_deletes")
    finalize_delete = _Forward(DeletePath.finalize_delete, "_deletes")
