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

The watch and the write's answer travel apart, so the cache may show the written version before
:meth:`record` is called with it (and then someone else's newer one). Waiting for that version
again would wait for the timeout, every pass finding the cache "behind" a version it had already
shown (a RayCluster's status held 10 s after a user's edit landed on top of the operator's
write). So the tracker also keeps the last few versions the cache showed of each object within
``timeout`` seconds (entries expire with the events' age, so their number follows the rate of
events, not the number of objects), and a write whose version is among them is not waited for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.decisions import note_wait
from rayop.runtime.informers.indexer import object_key, resource_version
from rayop.runtime.informers.shared_informer import EventHandlerFuncs

SEEN_KEPT: Final[int] = 4
"""Versions of one object the tracker remembers the cache showing (the newest ones)."""


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
        self._seen: dict[str, tuple[float, tuple[str, ...]]] = {}
        """Per key, oldest first: when the cache last showed the object, and its latest
        versions (at most :data:`SEEN_KEPT`)."""
        self.on_caught_up: Callable[[Mapping[str, Any]], None] | None = None

    def record(self, written: Mapping[str, Any]) -> None:
        """Remembers the resourceVersion of ``written``, the object a write returned."""
        rv = resource_version(written)
        if not rv:
            return
        key = object_key(written)
        seen = self._seen.get(key)
        if seen is not None and rv in seen[1]:  # the watch beat the answer: nothing to wait for
            self._pending.pop(key, None)
            self._waiting.discard(key)
            return
        self._pending[key] = (rv, self._clock.now() + self._timeout)

    def observe(self, cached: Mapping[str, Any]) -> None:
        """Notes that the cache now holds ``cached`` (called by :meth:`event_handler`)."""
        key, rv = object_key(cached), resource_version(cached)
        self._remember(key, rv)
        entry = self._pending.get(key)
        if entry is not None and entry[0] == rv:
            del self._pending[key]
            if key in self._waiting:
                self._waiting.discard(key)
                if self.on_caught_up is not None:
                    self.on_caught_up(cached)

    def _remember(self, key: str, rv: str) -> None:
        now = self._clock.now()
        old = self._seen.pop(key, None)
        self._seen[key] = (now, (*old[1][1 - SEEN_KEPT :], rv) if old is not None else (rv,))
        horizon = now - self._timeout
        while self._seen:  # oldest first: the expired ones are at the front
            oldest = next(iter(self._seen))
            if self._seen[oldest][0] >= horizon:
                break
            del self._seen[oldest]

    def forget(self, obj: Mapping[str, Any]) -> None:
        """Drops the record for ``obj`` (it was deleted)."""
        key = object_key(obj)
        self._pending.pop(key, None)
        self._waiting.discard(key)
        self._seen.pop(key, None)

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
        note_wait(
            f"own write not yet seen: the cache shows resourceVersion "
            f"{resource_version(cached)}, this controller wrote {rv}; looks again when the "
            f"watch delivers it (at most {deadline - self._clock.now():.1f} s)"
        )
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
