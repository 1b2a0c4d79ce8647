"""The reflector: keeps a store in step with the API server by list and watch.

Behaviour (as client-go's ``tools/cache/reflector.go``, kubernetes/client-go):

* LIST, paginated, at ``"0"`` the first time, at the last synced resourceVersion on later
  relists, and at ``""`` (a quorum read) when that version has expired (410); the store is then
  replaced with the listed items. When the client can list page by page (``list_pages``) and the
  store can take a replacement in pages (``begin_replace``), each page goes into the store as it
  arrives, so the whole decoded list never exists at once; a continue token that expires midway
  makes the reflector list again without paging, as client-go's pager does.
* WATCH from the list's resourceVersion with bookmarks and a random timeout in [300, 600) s.
  ADDED/MODIFIED/DELETED go to the store; every event (bookmarks included) advances the
  resourceVersion the next watch starts from.
* A watch that ends normally is restarted from that resourceVersion without relisting (one that
  ends within 1 s having delivered nothing counts as an error). A 410 Gone/Expired relists. Any
  other error waits out a jittered exponential backoff (800 ms, x2, capped at 30 s, reset after
  2 minutes without backoff) and watches again.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, Unpack, runtime_checkable

from rayop.kube.errors import Gone
from rayop.kube.options import ListOptions, WatchOptions, selection
from rayop.kube.resource import Resource
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.informers.backoff import DEFAULT_BACKOFF, Backoff, BackoffSettings
from rayop.runtime.informers.indexer import resource_version

log = logging.getLogger(__name__)

PAGE_SIZE = 500
SHORT_WATCH_SECONDS = 1.0


class WatchEventLike(Protocol):
    """What a watch yields: :class:`rayop.kube.client.WatchEvent` satisfies it."""

    @property
    def type(self) -> str: ...

    @property
    def object(self) -> dict[str, Any]: ...


class ListWatchClient(Protocol):
    """The part of :class:`rayop.kube.client.KubeClient` a reflector uses."""

    async def list(self, res: Resource, **options: Unpack[ListOptions]) -> dict[str, Any]: ...

    def watch(
        self, res: Resource, **options: Unpack[WatchOptions]
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEventLike]]: ...


@runtime_checkable
class PagedListClient(Protocol):
    """A client that can also list page by page (:meth:`rayop.kube.client.KubeClient.list_pages`)."""

    def list_pages(
        self, res: Resource, **options: Unpack[ListOptions]
    ) -> AsyncIterator[dict[str, Any]]: ...


class ReplaceSession(Protocol):
    """A replacement of a store's content delivered in pages; every method returns at once."""

    def add_page(self, items: list[dict[str, Any]]) -> None:
        """Stores one page of listed items (the list may be consumed)."""
        ...

    def finish(self, resource_version: str) -> None:
        """Ends the replacement: whatever no page held is removed."""
        ...


class ReflectorStore(Protocol):
    """Receives what the reflector observes; every method returns without blocking.

    A store that also has ``begin_replace() -> ReplaceSession`` is given LIST results page by
    page through a session instead of :meth:`replace`.
    """

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        """Replaces the whole content with the result of a LIST."""
        ...

    def add(self, obj: dict[str, Any]) -> None:
        """An ADDED watch event (the store may consume ``obj``: it is only read afterwards)."""
        ...

    def update(self, obj: dict[str, Any]) -> None:
        """A MODIFIED watch event (the store may consume ``obj``: it is only read afterwards)."""
        ...

    def delete(self, obj: dict[str, Any]) -> None:
        """A DELETED watch event (``obj`` is the last state)."""
        ...


class _ShortWatch(Exception):
    """A watch closed within a second without delivering anything."""


def _page_size(rv: str) -> int:
    # As client-go: a list at a specific resourceVersion is not paged, so the API server can
    # serve it from its watch cache.
    return PAGE_SIZE if rv in ("", "0") else 0


class Reflector:
    """Feeds a :class:`ReflectorStore` from list+watch of one resource until cancelled."""

    def __init__(
        self,
        client: ListWatchClient,
        resource: Resource,
        store: ReflectorStore,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        clock: Clock = MONOTONIC,
        backoff: BackoffSettings = DEFAULT_BACKOFF,
        watch_timeout_range: tuple[float, float] = (300.0, 600.0),
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._resource = resource
        self._store = store
        self._selection = selection(namespace, label_selector, field_selector)
        self._clock = clock
        self._rng = rng or random.Random()
        self._backoff = Backoff(backoff, clock=clock, rng=self._rng)
        self._watch_timeout_range = watch_timeout_range
        self._last_sync_rv = ""
        self._rv_unavailable = False
        self.lists = 0
        """How many LISTs completed (for tests and diagnostics)."""
        self.watches = 0
        """How many WATCHes were opened."""

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the next watch will start from ("" before the first list)."""
        return self._last_sync_rv

    async def run(self) -> None:
        """Blocks, listing and watching, until cancelled; never raises anything else."""
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("%s: list and watch failed: %r", self._resource.plural, exc)
            await self._backoff.wait()

    async def _list_and_watch(self) -> None:
        await self._list()
        while True:
            try:
                await self._watch_once()
            except Gone as exc:
                log.info("%s: watch expired (%s); relisting", self._resource.plural, exc)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("%s: watch failed: %r; retrying", self._resource.plural, exc)
                await self._backoff.wait()

    def _list_rv(self) -> str:
        if self._rv_unavailable:
            return ""
        return self._last_sync_rv or "0"

    async def _list(self) -> None:
        rv = self._list_rv()
        try:
            list_rv = await self._list_into_store(rv)
        except Gone:
            if rv == "":
                raise
            self._rv_unavailable = True
            list_rv = await self._list_into_store("")
        self._last_sync_rv = list_rv
        self._rv_unavailable = False
        self.lists += 1

    async def _list_into_store(self, rv: str) -> str:
        """Lists at ``rv`` and replaces the store's content; returns the list's resourceVersion."""
        begin = getattr(self._store, "begin_replace", None)
        if begin is not None and isinstance(self._client, PagedListClient):
            return await self._list_pages_into_store(rv, begin, self._client)
        result = await self._do_list(rv, paged=True)
        list_rv = resource_version(result)
        self._store.replace(result.get("items") or [], list_rv)
        return list_rv

    async def _list_pages_into_store(
        self,
        rv: str,
        begin: Callable[[], ReplaceSession],
        client: PagedListClient,
    ) -> str:
        session = begin()
        list_rv = ""
        pages = 0
        try:
            async for page in client.list_pages(
                self._resource, **self._selection, limit=_page_size(rv), resource_version=rv or None
            ):
                pages += 1
                list_rv = list_rv or resource_version(page)
                session.add_page(page.get("items") or [])
        except Gone:
            if pages == 0:
                raise
            log.info("%s: list continue token expired; listing again", self._resource.plural)
            result = await self._do_list(rv, paged=False)
            session = begin()
            session.add_page(result.get("items") or [])
            list_rv = resource_version(result)
        session.finish(list_rv)
        return list_rv

    async def _do_list(self, rv: str, *, paged: bool) -> dict[str, Any]:
        return await self._client.list(
            self._resource,
            **self._selection,
            limit=_page_size(rv) if paged else 0,
            resource_version=rv or None,
        )

    async def _watch_once(self) -> None:
        start_rv = self._last_sync_rv
        # Synthetic ADDEDs of a watch from "" or "0" are not RV-ordered: hold the RV until then.
        follow_rv = start_rv not in ("", "0")
        low, high = self._watch_timeout_range
        timeout = int(low + self._rng.random() * (high - low))
        started = self._clock.now()
        delivered = 0
        self.watches += 1
        async with self._client.watch(
            self._resource,
            **self._selection,
            resource_version=start_rv or None,
            timeout_seconds=timeout,
            allow_bookmarks=True,
        ) as events:
            async for event in events:
                delivered += 1
                kind = event.type
                obj = event.object
                if kind == "ADDED":
                    self._store.add(obj)
                elif kind == "MODIFIED":
                    self._store.update(obj)
                elif kind == "DELETED":
                    self._store.delete(obj)
                elif kind != "BOOKMARK":
                    log.warning("%s: unknown watch event type %r", self._resource.plural, kind)
                    continue
                if kind != "ADDED":
                    follow_rv = True
                rv = resource_version(obj)
                if follow_rv and rv:
                    self._last_sync_rv = rv
        if delivered == 0 and self._clock.now() - started < SHORT_WATCH_SECONDS:
            raise _ShortWatch(f"very short watch of {self._resource.plural}")
