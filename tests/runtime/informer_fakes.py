"""An in-memory list/watch/lease fake of the KubeClient surface the informer layer uses."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from rayop.apimachinery.labels import as_label_selector
from rayop.kube.errors import AlreadyExists, Conflict, Gone, NotFound
from rayop.kube.resource import Resource


@dataclass(frozen=True)
class Event:
    type: str
    object: dict[str, Any]


def pod(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    """A minimal pod manifest."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, **meta}}


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


@dataclass
class FakeApi:
    """Objects of one kind, a totally ordered event history and live watchers."""

    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: list[tuple[int, Event]] = field(default_factory=list)
    rv: int = 0
    compacted_rv: int = 0
    """Watches (and lists with resourceVersion) older than this get 410."""
    drop_after_events: int | None = None
    """Each watch ends normally after this many events."""
    watch_errors: list[BaseException] = field(default_factory=list)
    """Raised, one per watch, when a watch opens."""
    list_calls: list[dict[str, Any]] = field(default_factory=list)
    watch_calls: list[dict[str, Any]] = field(default_factory=list)
    _watchers: list[asyncio.Queue[Event | None]] = field(default_factory=list)

    # -- mutations --------------------------------------------------------------------------

    def _emit(self, kind: str, obj: dict[str, Any]) -> None:
        event = Event(kind, copy.deepcopy(obj))
        self.history.append((self.rv, event))
        for q in self._watchers:
            q.put_nowait(event)

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        kind = "MODIFIED" if _key(obj) in self.objects else "ADDED"
        self.objects[_key(obj)] = obj
        self._emit(kind, obj)
        return obj

    def remove(self, namespace: str, name: str) -> None:
        obj = self.objects.pop(f"{namespace}/{name}")
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._emit("DELETED", obj)

    def bookmark(self) -> None:
        self.rv += 1
        self._emit("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": str(self.rv)}})

    def compact(self) -> None:
        """Forgets history: older watches get 410 Gone."""
        self.compacted_rv = self.rv
        self.history.clear()

    def end_watches(self) -> None:
        """Ends every open watch normally (as a server timeout would)."""
        for q in self._watchers:
            q.put_nowait(None)

    # -- client surface ---------------------------------------------------------------------

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        self.list_calls.append({"resource_version": resource_version, "limit": limit})
        await asyncio.sleep(0)
        if resource_version not in (None, "", "0") and int(resource_version) < self.compacted_rv:
            raise Gone({"code": 410, "reason": "Expired", "message": "too old resource version"})
        selector = as_label_selector(label_selector)
        items = [
            copy.deepcopy(o)
            for o in self.objects.values()
            if (namespace is None or o["metadata"].get("namespace") == namespace)
            and selector.matches(o["metadata"].get("labels"))
        ]
        if metadata_only:
            items = [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                      "metadata": o["metadata"]} for o in items]  # fmt: skip
        return {"metadata": {"resourceVersion": str(self.rv)}, "items": items}

    @asynccontextmanager
    async def _stream(self, rv: int, label_selector: str | None) -> AsyncIterator[AsyncIterator[Event]]:
        if self.watch_errors:
            raise self.watch_errors.pop(0)
        if rv < self.compacted_rv:
            raise Gone({"code": 410, "reason": "Expired", "message": "too old resource version"})
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        for event_rv, event in self.history:
            if event_rv > rv:
                queue.put_nowait(event)
        self._watchers.append(queue)
        selector = as_label_selector(label_selector)

        async def events() -> AsyncIterator[Event]:
            sent = 0
            while True:
                if self.drop_after_events is not None and sent >= self.drop_after_events:
                    return
                event = await queue.get()
                if event is None:
                    return
                if event.type != "BOOKMARK" and not selector.matches(event.object["metadata"].get("labels")):
                    continue
                sent += 1
                yield event

        try:
            yield events()
        finally:
            self._watchers.remove(queue)

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> Any:
        self.watch_calls.append({"resource_version": resource_version, "bookmarks": allow_bookmarks})
        return self._stream(int(resource_version or 0), label_selector)


@dataclass
class FakeLeases:
    """Lease get/create/update with resourceVersion conflicts; ``down`` makes every call fail,
    ``hung`` makes every call wait forever (a partition that drops packets)."""

    leases: dict[str, dict[str, Any]] = field(default_factory=dict)
    rv: int = 0
    down: set[str] = field(default_factory=set)
    hung: set[str] = field(default_factory=set)
    writes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def client(self, who: str) -> LeaseClientView:
        return LeaseClientView(self, who)


@dataclass
class LeaseClientView:
    api: FakeLeases
    who: str

    async def _hang(self) -> None:
        await asyncio.sleep(0)
        if self.who in self.api.hung:
            await asyncio.Event().wait()

    def _check(self) -> None:
        if self.who in self.api.hung:
            raise AssertionError("unreachable: _hang() first")
        if self.who in self.api.down:
            raise ConnectionError(f"{self.who} cannot reach the API server")

    async def get(self, res: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        await self._hang()
        self._check()
        lease = self.api.leases.get(f"{namespace}/{name}")
        if lease is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        return copy.deepcopy(lease)

    async def create(self, res: Any, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        await self._hang()
        self._check()
        key = f"{namespace}/{obj['metadata']['name']}"
        if key in self.api.leases:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        return self._store(key, obj)

    async def update(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        await self._hang()
        self._check()
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        current = self.api.leases.get(key)
        if current is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict({"code": 409, "reason": "Conflict"})
        return self._store(key, obj)

    def _store(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.api.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.api.rv)
        self.api.leases[key] = obj
        self.api.writes.append((self.who, copy.deepcopy(obj)))
        return copy.deepcopy(obj)
