"""An informer made on its first read: :class:`OnDemandCache`.

controller-runtime's cache starts the informer of a kind on the first read of that kind and
blocks the read until it has synced (``pkg/cache/informer_cache.go``,
``pkg/cache/internal/informers.go``). An operator built on it therefore caches only the kinds
its reconcilers actually read. A reconciler given an :class:`OnDemandCache` does the same:
nothing is listed, watched or held until :meth:`OnDemandCache.reader` is first awaited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from rayop.kube.resource import Resource
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.informers.factory import InformerFactory

SYNC_TIMEOUT = 10.0
"""Seconds a first read waits for the new informer's first list before the pass fails (and is
retried with backoff, the informer still listing meanwhile)."""


class SyncingCache(CacheReader, Protocol):
    """A cache that fills itself from a first list (an informer; the fake cache of tests)."""

    def has_synced(self) -> bool:
        """Tells whether the first list has been stored."""
        ...

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Blocks until synced or ``timeout`` seconds pass; returns whether it did."""
        ...


class CacheNotSynced(RuntimeError):
    """The on-demand informer has not finished its first list in time."""


class OnDemandCache:
    """The cache of one resource, made and started on first use; never blocks but to sync.

    Args:
        make: Returns the informer (made and started by the factory on the first call; the
            same one afterwards).
        name: What the informer caches, for the error message.
        sync_timeout: Seconds a read waits for the first list.
    """

    def __init__(
        self, make: Callable[[], SyncingCache], name: str, *, sync_timeout: float = SYNC_TIMEOUT
    ) -> None:
        self._make = make
        self._name = name
        self._timeout = sync_timeout
        self._informer: SyncingCache | None = None

    @classmethod
    def of(cls, factory: InformerFactory, resource: Resource) -> OnDemandCache:
        """The on-demand cache of ``resource`` with the factory's filter for it."""
        return cls(lambda: factory.informer(resource), str(resource))

    @property
    def started(self) -> bool:
        """Tells whether the informer has been made (a read was asked for)."""
        return self._informer is not None

    async def reader(self) -> CacheReader:
        """Returns the synced cache, making and starting its informer on the first call.

        Raises:
            CacheNotSynced: The first list has not finished within ``sync_timeout``.
        """
        if self._informer is None:
            self._informer = self._make()
        if not self._informer.has_synced() and not await self._informer.wait_for_sync(
            self._timeout
        ):
            raise CacheNotSynced(
                f"the {self._name} cache, started on first read, has not synced within "
                f"{self._timeout:g} s"
            )
        return self._informer
