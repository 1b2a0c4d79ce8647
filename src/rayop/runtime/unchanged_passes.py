"""Periodic passes that could only repeat an object's last one: answered without running.

A controller asks to look at each object again every few minutes (``RequeueAfter``) to catch
what no watch reports. A pass reads the controller's caches, may read the API and the clock,
and writes what differs. When, since an object's last pass,

- no cache the controller reads has changed (the sum of the informers' change counters, which
  only grow, is what it was when that pass began), and
- that pass sent no API request at all (no read either), noted nothing in its account (no
  write, wait or Event), raised nothing, and asked for the periodic look and nothing sooner,

then a pass run now reads the same objects and decides the same nothing. :class:`UnchangedPasses`
answers it with the periodic look without running it. Any change in any cache runs every
object's next pass in full; so does a restart (nothing is kept across processes).

The controller that uses it keeps one rule: a pass whose decision depends on what the caches do
not show reads it with a request or notes a wait (and so is never followed by a skipped pass);
the clock only stamps what a pass writes, or decides in passes that ask for an earlier look.

The requests are counted by :func:`note_request`, a client's request hook, inside
:func:`counting_requests`: tasks a pass starts inherit its count, as they inherit its context.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["RequestCount", "UnchangedPasses", "counting_requests", "note_request"]

K = TypeVar("K", bound=Hashable)


class RequestCount:
    """The API requests sent inside one :func:`counting_requests` block so far."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = 0


_counting: contextvars.ContextVar[RequestCount | None] = contextvars.ContextVar(
    "pass_request_count", default=None
)


def note_request(method: str, path: str) -> None:
    """Counts one request for the pass running in this task (nothing outside one); shaped for
    a client's request hook; never blocks."""
    del method, path
    count = _counting.get()
    if count is not None:
        count.sent += 1


@contextlib.contextmanager
def counting_requests() -> Iterator[RequestCount]:
    """Counts the requests :func:`note_request` is told of in this task and the tasks it
    starts, until the block ends."""
    count = RequestCount()
    token = _counting.set(count)
    try:
        yield count
    finally:
        _counting.reset(token)


class UnchangedPasses(Generic[K]):
    """Which objects' next periodic pass may be answered without running; never blocks.

    Args:
        stamp: The sum of the change counters of every cache the controller's passes read
            (it only grows).
    """

    def __init__(self, stamp: Callable[[], int]) -> None:
        self._stamp = stamp
        self._quiet: dict[K, int] = {}
        self.skipped = 0
        """Passes answered without running, so far."""

    def __len__(self) -> int:
        """The number of objects whose last pass was quiet."""
        return len(self._quiet)

    def begin(self, key: K) -> int | None:
        """Called when a pass on ``key`` is due: None when it may be answered without running
        (counted in :attr:`skipped`), else the stamp to give :meth:`settle` when it ends."""
        stamp = self._stamp()
        if self._quiet.get(key) == stamp:
            self.skipped += 1
            return None
        return stamp

    def settle(self, key: K, stamp: int, *, quiet: bool) -> None:
        """Records how the pass on ``key`` that began at ``stamp`` ended: ``quiet`` when it
        sent no request, noted nothing, raised nothing and asked only for the periodic look."""
        if quiet:
            self._quiet[key] = stamp
        else:
            self._quiet.pop(key, None)

    def forget(self, key: K) -> None:
        """Runs ``key``'s next pass in full (its object is gone, or its pass failed)."""
        self._quiet.pop(key, None)
