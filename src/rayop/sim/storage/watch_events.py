"""Watch plumbing of the store: change events, bounded per-resource history, live watchers.

The store appends every committed change to a per-resource history (a bounded deque) and
offers it to the live watchers of that resource. A watcher filters by namespace and
selectors and turns selector transitions into ADDED/DELETED, as kube-apiserver does.
Events and their objects are shared between watchers and must be treated as read-only.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rayop.apimachinery.labels import LabelSelector
from rayop.sim.machinery.field_selectors import FieldSelector

__all__ = ["Event", "History", "WatchStream", "Watcher"]


@dataclass(slots=True, eq=False)
class Event:
    """One committed change (or a synthetic/bookmark event) of one object.

    Attributes:
        type: ADDED, MODIFIED, DELETED or BOOKMARK.
        obj: The object (new state; last state for DELETED). Read-only.
        rv: The resourceVersion of the change (0 for synthetic events).
        time: Event-loop time at which the change was committed.
        old: The previous state (for MODIFIED), used for selector transitions.
        line: Cache for the encoded watch line (filled by the HTTP layer).
    """

    type: str
    obj: dict[str, Any]
    rv: int
    time: float
    old: dict[str, Any] | None = None
    line: bytes | None = field(default=None, init=False)


class History:
    """A bounded history of one resource's events with the RV of the newest dropped one."""

    def __init__(self, maxlen: int, compacted_rv: int = 0) -> None:
        self.events: deque[Event] = deque(maxlen=maxlen)
        self.compacted_rv = compacted_rv

    def append(self, ev: Event) -> None:
        """Adds an event, dropping (and remembering) the oldest when full."""
        events = self.events
        if len(events) == events.maxlen and events:
            self.compacted_rv = events[0].rv
        events.append(ev)

    def since(self, rv: int) -> list[Event]:
        """Returns the events with an RV strictly greater than ``rv``, oldest first."""
        events = self.events
        if not events or events[-1].rv <= rv:
            return []
        out: list[Event] = []
        for ev in reversed(events):
            if ev.rv <= rv:
                break
            out.append(ev)
        out.reverse()
        return out


class Watcher:
    """A live subscription of one watch stream to one resource's changes."""

    __slots__ = ("_buffer", "_waiter", "closed", "fsel", "lsel", "namespace")

    def __init__(self, namespace: str | None, lsel: LabelSelector, fsel: FieldSelector) -> None:
        self.namespace = namespace
        self.lsel = lsel
        self.fsel = fsel
        self._buffer: deque[Event] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False

    def matches(self, obj: dict[str, Any]) -> bool:
        """Returns whether ``obj`` passes this watcher's namespace and selectors."""
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return False
        if not self.lsel.empty and not self.lsel.matches_object(obj):
            return False
        return self.fsel.empty or self.fsel.matches(obj)

    def offer(self, ev: Event) -> None:
        """Queues ``ev`` if it concerns this watcher (never blocks)."""
        old = ev.old
        new_match = self.matches(ev.obj)
        if ev.type == "MODIFIED" and old is not None:
            old_match = self.matches(old)
            if old_match and not new_match:
                ev = Event("DELETED", ev.obj, ev.rv, ev.time)
            elif new_match and not old_match:
                ev = Event("ADDED", ev.obj, ev.rv, ev.time)
            elif not new_match:
                return
        elif not new_match:
            return
        self.push(ev)

    def push(self, ev: Event) -> None:
        """Appends an event to the buffer and wakes the reader."""
        self._buffer.append(ev)
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def pending(self) -> int:
        """Returns how many events are buffered."""
        return len(self._buffer)

    def take_all(self) -> list[Event]:
        """Removes and returns every buffered event, oldest first (never blocks)."""
        events = list(self._buffer)
        self._buffer.clear()
        return events

    async def get(self, timeout: float | None = None) -> Event | None:
        """Waits for the next event; returns None on timeout or when closed (blocks)."""
        while not self._buffer:
            if self.closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    await asyncio.wait_for(self._waiter, timeout)
            except TimeoutError:
                return None
            finally:
                self._waiter = None
        return self._buffer.popleft()

    def close(self) -> None:
        """Marks the watcher closed and wakes a waiting reader."""
        self.closed = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)


class WatchStream:
    """An open watch: initial events (synthetic or replayed) then live ones.

    Iterate with ``async for ev in stream`` or call :meth:`next`; call :meth:`close` when done.
    """

    def __init__(
        self,
        watcher: Watcher,
        initial: list[Event],
        *,
        unregister: Callable[[Watcher], None],
        bookmark: Callable[[], Event],
        convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self._watcher = watcher
        self._convert = convert
        self._initial = deque(initial)
        self._unregister = unregister
        self._bookmark = bookmark

    def pending(self) -> int:
        """Returns how many events can be read without waiting."""
        return len(self._initial) + self._watcher.pending()

    async def next(self, timeout: float | None = None) -> Event | None:
        """Returns the next event, or None after ``timeout`` seconds or once closed (blocks)."""
        ev = self._initial.popleft() if self._initial else await self._watcher.get(timeout)
        if ev is not None and self._convert is not None:
            ev = Event(ev.type, self._convert(ev.obj), ev.rv, ev.time)
        return ev

    def bookmark(self) -> Event:
        """Returns a BOOKMARK event at the current RV (valid when nothing is pending)."""
        return self._bookmark()

    @property
    def closed(self) -> bool:
        """Whether the stream was closed."""
        return self._watcher.closed

    def close(self) -> None:
        """Stops the stream and unregisters it from the store."""
        if not self._watcher.closed:
            self._watcher.close()
            self._unregister(self._watcher)

    def __aiter__(self) -> WatchStream:
        return self

    async def __anext__(self) -> Event:
        ev = await self.next()
        if ev is None:
            raise StopAsyncIteration
        return ev
