"""The watch hub: per-resource watch history and the live watch streams fed from the table.

The hub is the object table's first change-feed subscriber: it turns every commit into an
:class:`~rayop.sim.storage.watch_events.Event`, appends it to the resource's bounded history and
offers it to that resource's live watchers, before any other subscriber sees the change.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable

from rayop.apimachinery.labels import LabelSelector
from rayop.apimachinery.objects import Obj
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.field_selectors import FieldSelector
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.objects import ObjectTable, clone
from rayop.sim.storage.watch_events import Event, History, Watcher, WatchStream

__all__ = ["WatchHub", "copied_events"]


class WatchHub:
    """Keeps each resource's recent events and opens watch streams on them.

    Args:
        table: The object table whose change feed the hub records (it subscribes now).
        history_size: Events kept per resource; a watch from an older RV gets 410 Expired.
    """

    def __init__(self, table: ObjectTable, *, history_size: int) -> None:
        self._table = table
        self._history_size = history_size
        self._history: dict[str, History] = {}
        self._watchers: dict[str, list[Watcher]] = {}
        table.subscribe(self._record)

    def _record(self, type_: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        key = info.key
        ev = Event(type_, obj, self._table.rv, _loop_time(), old if type_ == "MODIFIED" else None)
        hist = self._history.get(key)
        if hist is None:
            hist = self._history[key] = History(self._history_size, self._table.base_rv)
        hist.append(ev)
        for w in self._watchers.get(key, ()):
            w.offer(ev)

    def open(
        self,
        info: ResourceInfo,
        namespace: str | None,
        *,
        resource_version: str | None,
        lsel: LabelSelector,
        fsel: FieldSelector,
        shown: ResourceInfo,
        convert: Callable[[Obj], Obj] | None,
    ) -> WatchStream:
        """Opens a watch stream on stored resource ``info`` (never blocks).

        ``resource_version`` None, "" or "0" starts with synthetic ADDED events of the current
        state; otherwise the stream replays every change after that RV. ``shown`` is the
        resource the client asked for (its kind and apiVersion go into bookmarks) and
        ``convert`` turns stored objects into its form.

        Raises:
            StatusError: 410 Expired when the RV is older than the retained history; 400 for a
                malformed RV.
        """
        ns = namespace if info.namespaced else None
        watcher = Watcher(ns, lsel, fsel)
        key = info.key
        if resource_version in (None, "", "0"):
            objs, _ = self._table.list(info, ns, lsel, fsel, copy=False)
            initial = [Event("ADDED", o, 0, 0.0) for o in objs]
        else:
            initial = self._replay(key, str(resource_version), watcher)
        self._watchers.setdefault(key, []).append(watcher)

        def unregister(w: Watcher) -> None:
            lst = self._watchers.get(key)
            if lst and w in lst:
                lst.remove(w)

        def bookmark() -> Event:
            rv = self._table.rv
            obj = {
                "kind": shown.kind,
                "apiVersion": shown.api_version,
                "metadata": {"resourceVersion": str(rv)},
            }
            return Event("BOOKMARK", obj, rv, _loop_time())

        return WatchStream(
            watcher, initial, unregister=unregister, bookmark=bookmark, convert=convert
        )

    def _replay(self, key: str, resource_version: str, watcher: Watcher) -> list[Event]:
        try:
            start = int(resource_version)
        except ValueError as exc:
            raise se.bad_request(f"invalid resource version: {resource_version}") from exc
        hist = self._history.get(key)
        compacted = hist.compacted_rv if hist is not None else self._table.base_rv
        if start < compacted:
            raise se.expired(f"too old resource version: {start} ({compacted})")
        if hist is None:
            return []
        for ev in hist.since(start):
            watcher.offer(ev)
        return watcher.take_all()


def copied_events(
    stream: WatchStream, bookmark_interval: float | None
) -> AsyncGenerator[tuple[str, Obj], None]:
    """Returns an async iterator of ``(event_type, obj_copy)`` over ``stream``; closes it at the end.

    With ``bookmark_interval`` a BOOKMARK is yielded after that many idle seconds.
    """

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
