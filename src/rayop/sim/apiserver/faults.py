"""Fault injection knobs of the embedded API server and the request-path checks that apply them.

A :class:`Faults` instance is mutable: tests and benchmarks change its fields while the server
runs, and the next request sees the new values.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from rayop.sim.machinery import errors as se

__all__ = ["FaultInjector", "Faults"]


@dataclass
class Faults:
    """Fault settings (mutable; read on every request).

    Attributes:
        latency: Per audit verb ("get", "list", "watch", "create", "update", "patch",
            "delete", "deletecollection"; "*" for any) a ``(fixed, jitter)`` pair in seconds;
            each request sleeps ``fixed + uniform(0, jitter)`` before it is served.
        error_429_rate: Fraction of resource requests answered 429 with Retry-After.
        retry_after_seconds: The Retry-After value of injected (and in-flight cap) 429s.
        error_500_rate: Fraction of resource requests answered 500 InternalError.
        watch_drop_after_events: Close each watch stream after this many events (None: never).
        watch_drop_after_seconds: Close each watch stream after this many seconds (None: never).
        watch_delay: Seconds each watch event is held before it is sent (informer lag).
        conflict_rate: Fraction of update/patch requests answered 409 Conflict.
        max_in_flight: Cap on concurrent non-watch requests; excess ones get 429 (None: no cap).
        service_slots: How many requests the added ``latency`` serves at once (None: all): a
            server at its capacity, where requests queue for a slot, so more concurrent clients
            wait longer without getting more done.
        conflict_first_status_write_per_object: The first /status update or patch of each
            object (by resource, namespace and name) is answered 409 Conflict.
        seed: Seed of the fault dice (None: random).
    """

    latency: dict[str, tuple[float, float]] = field(default_factory=dict)
    error_429_rate: float = 0.0
    retry_after_seconds: int = 1
    error_500_rate: float = 0.0
    watch_drop_after_events: int | None = None
    watch_drop_after_seconds: float | None = None
    watch_delay: float = 0.0
    conflict_rate: float = 0.0
    max_in_flight: int | None = None
    service_slots: int | None = None
    conflict_first_status_write_per_object: bool = False
    seed: int | None = None


class FaultInjector:
    """Applies a :class:`Faults` to requests: dice, latency and the in-flight counter."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._rng = random.Random(faults.seed)
        self.in_flight = 0
        self._status_written: set[tuple[str, str, str, str]] = set()
        self._slots: tuple[int, asyncio.Semaphore] | None = None

    def latency(self, verb: str) -> float:
        """Returns the seconds to delay a request of ``verb`` (0 when none is configured)."""
        lat = self.faults.latency
        if not lat:
            return 0.0
        spec = lat.get(verb) or lat.get("*")
        if not spec:
            return 0.0
        fixed, jitter = spec
        return fixed + (self._rng.uniform(0.0, jitter) if jitter > 0 else 0.0)

    @contextlib.asynccontextmanager
    async def service_slot(self) -> AsyncIterator[None]:
        """Holds one of ``service_slots`` for the request's added latency (none when unset)."""
        slots = self.faults.service_slots
        if slots is None:
            yield
            return
        if self._slots is None or self._slots[0] != slots:
            self._slots = (slots, asyncio.Semaphore(slots))
        async with self._slots[1]:
            yield

    def check_errors(self, verb: str, *, resource_request: bool) -> None:
        """Raises an injected error for this request, if the dice say so.

        Raises:
            StatusError: 429, 500 or (for update/patch) 409.
        """
        f = self.faults
        if not resource_request:
            return
        if f.error_429_rate and self._rng.random() < f.error_429_rate:
            raise se.too_many_requests(f.retry_after_seconds)
        if f.error_500_rate and self._rng.random() < f.error_500_rate:
            raise se.internal_error("injected fault")

    def check_conflict(
        self,
        plural: str,
        group: str,
        name: str,
        *,
        namespace: str = "",
        subresource: str | None = None,
    ) -> None:
        """Raises an injected 409 Conflict for an update or patch, if the dice (or the
        first-status-write rule) say so."""
        if self.faults.conflict_first_status_write_per_object and subresource == "status":
            key = (group, plural, namespace, name)
            if key not in self._status_written:
                self._status_written.add(key)
                raise se.conflict(plural, group, name)
        rate = self.faults.conflict_rate
        if rate and self._rng.random() < rate:
            raise se.conflict(plural, group, name)

    def enter(self) -> None:
        """Counts a request in flight.

        Raises:
            StatusError: 429 when the max_in_flight cap is reached.
        """
        cap = self.faults.max_in_flight
        if cap is not None and self.in_flight >= cap:
            raise se.too_many_requests(self.faults.retry_after_seconds)
        self.in_flight += 1

    def leave(self) -> None:
        """Counts a request as finished."""
        self.in_flight -= 1
