"""Wires a controller's own-writes tracker: fed by its primary informer, re-enqueues on catch-up.

The stale-cache rule of all three controllers (see :class:`~rayop.runtime.own_writes.OwnWrites`):
a pass never sends a write based on a cached object older than this controller's own last write
of it, and the object is reconciled again the moment the cache shows that write. A blueprint's
``build`` calls :func:`track_own_writes` before it builds its reconciler and hands the tracker
back; the assembly calls :func:`enqueue_when_caught_up` once the controller exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rayop.runtime.clock import Clock
from rayop.runtime.controller import Controller
from rayop.runtime.informers.factory import Informer
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request


def track_own_writes(informer: Informer, *, clock: Clock) -> OwnWrites:
    """Returns a tracker that ``informer``'s events keep up to date; never blocks."""
    own_writes = OwnWrites(clock=clock)
    informer.add_event_handler(own_writes.event_handler())
    return own_writes


def enqueue_when_caught_up(own_writes: OwnWrites, controller: Controller) -> None:
    """Makes ``own_writes`` enqueue an object on ``controller`` once the cache shows the write a
    pass had to wait for; never blocks."""

    def enqueue(cached: Mapping[str, Any]) -> None:
        meta = cached.get("metadata") or {}
        controller.enqueue(Request(meta.get("namespace") or "", meta.get("name", "")))

    own_writes.on_caught_up = enqueue
