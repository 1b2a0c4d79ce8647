"""Remembers a controller's own writes until its informer cache has seen them.

A reconcile reads its object from the informer cache, which lags the API server. Right after a
controller writes an object (say its status, at resourceVersion X), the next reconcile of that
key can still read the version before X; a write based on it is bound to fail with 409 Conflict,
which costs a rate-limited requeue and an error in ``controller_runtime_reconcile_errors_total``. :class:`OwnWrites` lets the reconcile see that the cache is behind its own last
write and skip the doomed write instead.

Usage: :meth:`record` the object a successful write returned; register :meth:`event_handler` on
the informer of that kind; ask :meth:`cache_behind` with the cached object before writing.
Objects are keyed by ``namespace/name``. An entry ends when the cache shows exactly the recorded
resourceVersion, when the object is deleted, or after ``timeout`` seconds (resourceVersions are
opaque, so a relist that skips straight to a newer version can only be told apart by time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.indexer import object_key, resource_version
from rayop.runtime.informer import EventHandlerFuncs


class OwnWrites:
    """Per-key record of the last resourceVersion this controller wrote; never blocks.

    Args:
        timeout: Seconds after which an unobserved write is forgotten.
        clock: Time source for the timeout.

    Attributes:
        on_caught_up: Called with the cached object when the cache shows a write that a
            :meth:`cache_behind` answer made someone wait for (a controller enqueues the key
            again, so the deferred work runs as soon as it can succeed).
    """

    def __init__(self, *, timeout: float = 10.0, clock: Clock = MONOTONIC) -> None:
        self._timeout = timeout
        self._clock = clock
        self._pending: dict[str, tuple[str, float]] = {}
        self._waiting: set[str] = set()
        self.on_caught_up: Callable[[Mapping[str, Any]], None] | None = None

    def record(self, written: Mapping[str, Any]) -> None:
        """Remembers the resourceVersion of ``written``, the object a write returned."""
        rv = resource_version(written)
        if rv:
            self._pending[object_key(written)] = (rv, self._clock.now() + self._timeout)

    def observe(self, cached: Mapping[str, Any]) -> None:
        """Notes that the cache now holds ``cached`` (called by :meth:`event_handler`)."""
        key = object_key(cached)
        entry = self._pending.get(key)
        if entry is not None and entry[0] == resource_version(cached):
            del self._pending[key]
            if key in self._waiting:
                self._waiting.discard(key)
                if self.on_caught_up is not None:
                    self.on_caught_up(cached)

    def forget(self, obj: Mapping[str, Any]) -> None:
        """Drops the record for ``obj`` (it was deleted)."""
        key = object_key(obj)
        self._pending.pop(key, None)
        self._waiting.discard(key)

    def cache_behind(self, cached: Mapping[str, Any]) -> bool:
        """Tells whether ``cached`` predates this controller's last write of the same object."""
        key = object_key(cached)
        entry = self._pending.get(key)
        if entry is None:
            return False
        rv, deadline = entry
        if rv == resource_version(cached) or self._clock.now() >= deadline:
            del self._pending[key]
            self._waiting.discard(key)
            return False
        self._waiting.add(key)
        return True

    def event_handler(self) -> EventHandlerFuncs:
        """Returns the informer event handler that feeds :meth:`observe` and :meth:`forget`."""
        return EventHandlerFuncs(
            add=lambda obj, _initial: self.observe(obj),
            update=lambda _old, new: self.observe(new),
            delete=self.forget,
        )

    def __len__(self) -> int:
        return len(self._pending)
