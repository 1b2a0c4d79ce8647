"""Keeps the embedded API server's cyclic collector from stalling it: :func:`freeze_heap_every`.

The server holds every stored object as plain dicts and lists: tens of millions of tracked
objects at 30,000 RayClusters with their pods, services and events. A full (generation 2)
collection of CPython's cyclic collector walks all of them with the event loop stopped; at
that size one took over 10 s, and every client's Lease renewal in flight timed out at once
(``benchmarks/sharded_scale.py --clusters 30000``: three sharded replicas exited together, twice,
about 11 minutes in). A real kube-apiserver has no such pause.

Stored objects form no reference cycles (JSON trees), so a collection never frees them: they
are freed by reference count when replaced or deleted, frozen or not. Freezing moves every
object tracked so far out of all later collections (``gc.freeze``), so a full collection walks
only what was allocated since the last freeze. A cycle that was still alive when frozen and dies
later is never freed; freezing every few seconds leaves only the cycles of the requests in
flight at that instant, a few objects each.

Only for a process that runs nothing but the server (``rayop apiserver``): freezing a test
process would keep its cycles for its whole life.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

FREEZE_INTERVAL = 5.0
"""Seconds between two freezes."""

SLOW_COLLECTION = 1.0
"""A collection that stops the server at least this long is logged (a warning)."""


class _CollectionTimer:
    """A ``gc.callbacks`` entry that logs collections of at least :data:`SLOW_COLLECTION`."""

    def __init__(self) -> None:
        self._started = 0.0
        self.slowest = 0.0
        """The longest collection seen, in seconds."""

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        self.slowest = max(self.slowest, took)
        if took >= SLOW_COLLECTION:
            log.warning(
                "garbage collection of generation %s stopped the server for %.1f s (%s collected)",
                info.get("generation"), took, info.get("collected"),
            )  # fmt: skip


async def freeze_heap_every(seconds: float = FREEZE_INTERVAL) -> None:
    """Freezes the heap every ``seconds`` until cancelled, and logs any collection that takes
    :data:`SLOW_COLLECTION` or more meanwhile (see the module docstring)."""
    timer = _CollectionTimer()
    gc.callbacks.append(timer)
    try:
        while True:
            await asyncio.sleep(seconds)
            gc.freeze()
    finally:
        gc.callbacks.remove(timer)
