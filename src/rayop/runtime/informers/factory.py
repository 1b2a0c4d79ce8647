"""Shares informers: one per (resource, namespace, label selector) in a process.

The factory applies a :class:`CacheConfig`: per-resource label filters (an operator may cache only
the objects it created; the default filters nothing), whether ``managedFields`` is dropped before
caching, the resync period, and a replica's shard selector (ANDed with every filter but those of
the resources it exempts, so that each replica caches only its share). With several watched namespaces, :meth:`InformerFactory.informer` returns a
:class:`MultiNamespaceInformer` that merges one informer per namespace.
"""

from __future__ import annotations

import asyncio
import builtins
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rayop.apimachinery.labels import LabelSelector
from rayop.apimachinery.objects import ObjView as Obj
from rayop.kube.resource import Resource
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.informers.indexer import IndexFunc
from rayop.runtime.informers.reflector import ListWatchClient
from rayop.runtime.informers.shared_informer import (
    EventHandler,
    HandlerRegistration,
    SharedInformer,
    strip_managed_fields,
)

DEFAULT_SYNC_PERIOD = 10 * 3600.0
"""controller-runtime's default SyncPeriod (each informer gets a factor in [0.9, 1.1))."""


@dataclass(frozen=True)
class CacheConfig:
    """What the shared cache holds; the default holds everything."""

    label_selectors: Mapping[str, str] = field(default_factory=dict)
    """Label filter per resource, keyed by ``str(resource)`` (``"pods"``, ``"jobs.batch"``)."""
    strip_managed_fields: bool = True
    """Drop ``metadata.managedFields`` before caching (saves memory; nothing reads it)."""
    resync_period: float | None = DEFAULT_SYNC_PERIOD
    """Base resync period in seconds (None: never resync)."""
    shard_selector: str | None = None
    """ANDed with the filter of every resource not in ``unsharded`` (None: no sharding)."""
    unsharded: frozenset[str] = frozenset()
    """Resources (``str(resource)``) the shard selector does not apply to."""
    server_only_labels: frozenset[str] = frozenset()
    """Label keys only the API server selects on: the caches keep no copy of them beside each
    object (see :class:`~rayop.runtime.informers.indexer.Indexer`); a cache read selecting on
    one decodes its candidates."""

    def selector_for(self, resource: Resource) -> str | None:
        """Returns the label filter configured for ``resource`` (with the shard selector), or None."""
        own = self.label_selectors.get(str(resource))
        if self.shard_selector is None or str(resource) in self.unsharded:
            return own
        return f"{own},{self.shard_selector}" if own else self.shard_selector


NO_FILTER = CacheConfig()
"""The default: every object of every resource is cached."""


class MultiNamespaceInformer:
    """Presents several single-namespace informers of one resource as one."""

    def __init__(self, resource: Resource, informers: Mapping[str, SharedInformer]) -> None:
        self.resource = resource
        self.informers = dict(informers)

    def add_event_handler(self, handler: EventHandler) -> _MultiRegistration:
        """Registers ``handler`` with every namespace's informer."""
        return _MultiRegistration([i.add_event_handler(handler) for i in self.informers.values()])

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Adds named index functions to every namespace's informer."""
        for informer in self.informers.values():
            informer.add_indexers(indexers)

    def has_synced(self) -> bool:
        """Tells whether every namespace's informer has synced."""
        return all(i.has_synced() for i in self.informers.values())

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Blocks until every namespace's informer has synced or the timeout passes."""
        return await _all_synced(self.informers.values(), timeout)

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """Returns the cached object, or None (also for an unwatched namespace)."""
        informer = self.informers.get(namespace or "")
        return informer.get(namespace, name) if informer is not None else None

    def list(
        self,
        namespace: str | None = None,
        *,
        label_selector: str | Mapping[str, str] | LabelSelector | None = None,
    ) -> list[Obj]:
        """Returns matching cached objects across the watched namespaces."""
        if namespace is not None:
            informer = self.informers.get(namespace)
            return informer.list(namespace, label_selector=label_selector) if informer else []
        out: list[Obj] = []
        for informer in self.informers.values():
            out.extend(informer.list(label_selector=label_selector))
        return out

    @property
    def changes(self) -> int:
        """The sum of every namespace's :attr:`SharedInformer.changes` (it only grows)."""
        return sum(informer.changes for informer in self.informers.values())

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        """Returns cached objects filed under ``value`` in ``index``, across namespaces."""
        out: builtins.list[Obj] = []
        for informer in self.informers.values():
            out.extend(informer.by_index(index, value))
        return out

    def start(self) -> None:
        """Starts every namespace's informer; never blocks."""
        for informer in self.informers.values():
            informer.start()

    async def stop(self) -> None:
        """Stops every namespace's informer."""
        for informer in self.informers.values():
            await informer.stop()


class _MultiRegistration:
    def __init__(self, registrations: Sequence[HandlerRegistration]) -> None:
        self.registrations = list(registrations)

    def has_synced(self) -> bool:
        return all(r.has_synced() for r in self.registrations)


Informer = SharedInformer | MultiNamespaceInformer
"""What :meth:`InformerFactory.informer` returns; both have the same reading/handler API."""


class InformerFactory:
    """Creates and shares informers; one per (resource, namespace, label selector).

    Args:
        client: The client every informer lists and watches with.
        namespaces: The namespaces to cache; None or empty means all.
        config: Label filters, managedFields stripping and resync period; default: no filter.
        clock: The time source of the informers.
        rng: The random source of resync jitter and watch timeouts.
    """

    def __init__(
        self,
        client: ListWatchClient,
        *,
        namespaces: Sequence[str] | None = None,
        config: CacheConfig = NO_FILTER,
        clock: Clock = MONOTONIC,
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._namespaces = list(namespaces) if namespaces else None
        self._config = config
        self._clock = clock
        self._rng = rng or random.Random()
        self._informers: dict[tuple[Resource, str | None, str | None], SharedInformer] = {}
        self._started = False

    def informer(
        self, resource: Resource, *, label_selector: str | None = None
    ) -> SharedInformer | MultiNamespaceInformer:
        """Returns the shared informer for ``resource`` across the watched namespaces.

        ``label_selector`` defaults to the one the cache config sets for the resource. An informer
        created after :meth:`start` is started at once.
        """
        selector = (
            label_selector if label_selector is not None else self._config.selector_for(resource)
        )
        if self._namespaces is None or not resource.namespaced:
            return self.informer_for_namespace(resource, None, label_selector=selector)
        per_ns = {
            ns: self.informer_for_namespace(resource, ns, label_selector=selector)
            for ns in self._namespaces
        }
        if len(per_ns) == 1:
            return next(iter(per_ns.values()))
        return MultiNamespaceInformer(resource, per_ns)

    def informer_for_namespace(
        self, resource: Resource, namespace: str | None, *, label_selector: str | None = None
    ) -> SharedInformer:
        """Returns the shared informer of exactly (resource, namespace, label_selector)."""
        key = (resource, namespace, label_selector)
        informer = self._informers.get(key)
        if informer is None:
            period = self._config.resync_period
            informer = SharedInformer(
                self._client,
                resource,
                namespace=namespace,
                label_selector=label_selector,
                resync_period=period * (0.9 + 0.2 * self._rng.random()) if period else None,
                transform=strip_managed_fields if self._config.strip_managed_fields else None,
                clock=self._clock,
                server_only_labels=self._config.server_only_labels,
                rng=random.Random(self._rng.random()),
            )
            self._informers[key] = informer
            if self._started:
                informer.start()
        return informer

    def delivered(self, resource: str, namespace: str, resource_version: int) -> bool:
        """Tells whether every informer of ``resource`` (``str(resource)``) that covers
        ``namespace`` has delivered ``resource_version`` (True when there is none)."""
        for (res, ns, _), informer in self._informers.items():
            if str(res) != resource or ns not in (None, namespace):
                continue
            seen = informer.reflector.last_sync_resource_version
            if not seen.isdigit() or int(seen) < resource_version:
                return False
        return True

    @property
    def informers(self) -> list[SharedInformer]:
        """Every informer created so far."""
        return list(self._informers.values())

    def start(self) -> None:
        """Starts every informer, and any created later; never blocks."""
        self._started = True
        for informer in self._informers.values():
            informer.start()

    def has_synced(self) -> bool:
        """Tells whether every informer has synced."""
        return all(i.has_synced() for i in self._informers.values())

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Blocks until every informer has synced or ``timeout`` passes; returns whether all did."""
        return await _all_synced(self.informers, timeout)

    async def stop(self) -> None:
        """Stops every informer."""
        self._started = False
        for informer in self._informers.values():
            await informer.stop()


async def _all_synced(informers: Iterable[SharedInformer], timeout: float | None) -> bool:
    """Waits for every informer at once (in one task group); returns whether all synced."""
    async with asyncio.TaskGroup() as group:
        waits = [group.create_task(i.wait_for_sync(timeout)) for i in informers]
    return all(wait.result() for wait in waits)
