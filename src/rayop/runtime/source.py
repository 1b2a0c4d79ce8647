"""What feeds a controller: sources of reconcile requests.

A source calls ``enqueue(request, priority)`` whenever an object it watches may need
reconciling, and reports through ``has_synced()`` when its initial listing has been delivered.
Informers implement it in :mod:`rayop.runtime`'s informer layer; tests use
:class:`rayop.testing.sources.InMemorySource`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, runtime_checkable

from rayop.runtime.reconcile import Request


class Enqueue(Protocol):
    """Queues a request for reconciliation at an optional priority; never blocks."""

    def __call__(self, request: Request, priority: int | None = None) -> None: ...


@runtime_checkable
class Source(Protocol):
    """A stream of reconcile requests for one controller."""

    def start(self, enqueue: Enqueue) -> Awaitable[None] | None:
        """Starts delivering requests to ``enqueue``.

        Must not block for long: it may return an awaitable, which the controller awaits before
        waiting for sync, but long-running work belongs to tasks the source owns. ``enqueue`` may
        be called from then on, including after the controller has stopped (it is then a no-op).
        """
        ...

    def has_synced(self) -> bool:
        """Tells whether every request of the initial listing has been enqueued; never blocks."""
        ...
