"""A public test kit for code built on the controller machinery."""

from __future__ import annotations

from collections.abc import Iterable

from rayop.runtime.reconcile import Request
from rayop.runtime.source import Enqueue, Source


class InMemorySource:
    """A :class:`~rayop.runtime.source.Source` fed by the test through :meth:`add`.

    Requests added before the controller starts the source are buffered and delivered at start.

    Args:
        requests: Requests to deliver when the source starts.
        synced: What :meth:`has_synced` reports once started; change it with :meth:`set_synced`.
    """

    def __init__(self, requests: Iterable[Request] = (), *, synced: bool = True) -> None:
        self._pending: list[tuple[Request, int | None]] = [(r, None) for r in requests]
        self._enqueue: Enqueue | None = None
        self._synced = synced

    @property
    def started(self) -> bool:
        """Whether a controller has started the source."""
        return self._enqueue is not None

    def start(self, enqueue: Enqueue) -> None:
        """Delivers the buffered requests to ``enqueue``, and every later one as it is added."""
        self._enqueue = enqueue
        pending, self._pending = self._pending, []
        for request, priority in pending:
            enqueue(request, priority)

    def add(self, request: Request, priority: int | None = None) -> None:
        """Enqueues ``request`` now, or at start if the source has not been started."""
        if self._enqueue is None:
            self._pending.append((request, priority))
        else:
            self._enqueue(request, priority)

    def has_synced(self) -> bool:
        """True once started and marked synced."""
        return self._enqueue is not None and self._synced

    def set_synced(self, synced: bool = True) -> None:
        """Sets what :meth:`has_synced` reports once started."""
        self._synced = synced


_source: type[Source] = InMemorySource
