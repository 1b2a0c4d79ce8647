"""Records ``events.k8s.io/v1`` Events about objects, as client-go's ``tools/events`` does.

:meth:`EventRecorder.event` never blocks and never raises: it builds the Event, lets the
series cache (:mod:`rayop.runtime.events.series`) decide whether it needs a write (a create,
the patch that starts a series, or nothing but a higher count), and hands the write to the
background writer (:mod:`rayop.runtime.events.writer`), whose tasks belong to the recorder and
end with :meth:`EventRecorder.close`. So a failing or slow API server cannot break a reconcile.

The recorder is meant to get a client of its own, with its own token bucket (the manager gives
it one), so events never spend the reconcile client's budget, as controller-runtime gives
client-go's broadcaster its own REST client. Every event asked for is counted in
``rayop_events_recorded_total``, and every one not written as its own request in
``rayop_events_unsent_total`` by reason (:mod:`rayop.runtime.events.metrics`). Event names are
client-go's: ``<regarding name>.<wall time in nanoseconds, hex>``. Timestamps are the injected
clock's wall time.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import uuid
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from rayop.kube.clock import micro_time
from rayop.kube.resources import EVENTS
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.decisions import note_event
from rayop.runtime.events.metrics import EventMetrics, UnsentReason
from rayop.runtime.events.series import FINISH_TIME, REFRESH_TIME, SWEEP_PERIOD, SeriesCache
from rayop.runtime.events.writer import MAX_PENDING_BYTES, EventClient, EventWriter
from rayop.runtime.timeouts import clock_timeout

__all__ = ["EventClient", "EventRecorder", "EventSink", "EventType", "object_reference"]

log = logging.getLogger(__name__)

MAX_NOTE_LENGTH = 1024
"""events.k8s.io/v1 refuses a longer note; longer notes are cut to this length."""

CLOSE_FLUSH_TIMEOUT = 5.0
"""Seconds :meth:`EventRecorder.close` waits for queued writes."""

EventType = Literal["Normal", "Warning"]


class EventSink(Protocol):
    """Where a reconciler records Events (an :class:`EventRecorder`, or a test's recording
    sink); never blocks, never raises."""

    def event(self, regarding: Mapping[str, Any], event_type: EventType, reason: str, note: str, *,
              action: str | None = None) -> None:
        """Records one Event about ``regarding``."""
        ...


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def object_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the ``regarding`` reference of an object (apiVersion, kind, name, uid...)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    """Writes Events for one reporting controller; see the module docstring.

    Args:
        client: Where the Events go; best a client with a token bucket of its own.
        reporting_controller: ``reportingController`` of every Event.
        reporting_instance: ``reportingInstance``; default ``<controller>-<hostname>``.
        series_window: Seconds after its last observation a series ends (client-go: 6 min).
        clock: Time source of timestamps, sweeps and retry sleeps.
        metrics: Where the counters go; a private registry unless given.
        max_pending_bytes: The memory budget of waiting writes.
    """

    def __init__(
        self,
        client: EventClient,
        *,
        reporting_controller: str,
        reporting_instance: str | None = None,
        series_window: float = FINISH_TIME,
        clock: Clock = MONOTONIC,
        metrics: EventMetrics | None = None,
        max_pending_bytes: int = MAX_PENDING_BYTES,
    ) -> None:
        self.reporting_controller = reporting_controller
        self.reporting_instance = (
            reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        )
        self.client = client
        """Where the Events are written."""
        self._clock = clock
        self.metrics = metrics if metrics is not None else EventMetrics()
        self.metrics.initialise(reporting_controller)
        self._recorded = {
            t: self.metrics.recorded.labels(reporting_controller, t) for t in ("Normal", "Warning")
        }
        self._aggregated = self.metrics.unsent.labels(reporting_controller, "aggregated")
        self._series = SeriesCache(finish_time=series_window)
        self._writer = EventWriter(
            client,
            clock=clock,
            count_unsent=self._count_unsent,
            name=f"event recorder {reporting_controller}",
            max_pending_bytes=max_pending_bytes,
        )
        self._sweeping = False
        self._last_name_ns = 0

    @property
    def dropped(self) -> int:
        """Events dropped because the pending writes had reached their memory budget."""
        return self._writer.dropped

    def unsent(self) -> dict[str, int]:
        """Returns how many events were not written as their own request, by reason."""
        return self.metrics.unsent_by_reason(self.reporting_controller)

    def event(self, regarding: Mapping[str, Any], event_type: EventType, reason: str, note: str, *,
              action: str | None = None, related: Mapping[str, Any] | None = None) -> None:
        """Records an Event about ``regarding`` (an object or object reference); never blocks.

        Args:
            regarding: The object the event is about (its metadata is used for the reference).
            event_type: ``"Normal"`` or ``"Warning"``.
            reason: Short CamelCase machine-readable reason.
            note: Human-readable description (truncated to 1 KiB).
            action: What the controller did; defaults to ``reason``.
            related: A second object involved, if any.
        """
        note_event(f"{event_type} {reason}: {note}")
        try:
            counter = self._recorded.get(event_type)
            if counter is None:
                counter = self.metrics.recorded.labels(self.reporting_controller, event_type)
            counter.inc()
            body = self._build(
                regarding, event_type, reason, note[:MAX_NOTE_LENGTH], action or reason, related
            )
            write = self._series.observe(body, self._clock.now(), body["eventTime"])
            if write is None:
                self._aggregated.inc()
                return
            self._writer.submit(write)
            if not self._sweeping:
                self._sweeping = True
                self._writer.spawn(self._finish_loop(), name="finish series")
                self._writer.spawn(self._refresh_loop(), name="refresh series")
        except Exception:
            log.exception("failed to record event %s", reason)

    def _build(
        self,
        regarding: Mapping[str, Any],
        event_type: str,
        reason: str,
        note: str,
        action: str,
        related: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        ref = object_reference(regarding) if "metadata" in regarding else dict(regarding)
        namespace = ref.get("namespace") or "default"
        wall = self._clock.wall()
        body: dict[str, Any] = {
            "apiVersion": EVENTS.api_version,
            "kind": EVENTS.kind,
            "metadata": {"name": self._event_name(str(ref.get("name")), wall.timestamp()),
                         "namespace": namespace},
            "eventTime": micro_time(wall),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "note": note,
            "type": event_type,
            "regarding": ref,
        }  # fmt: skip
        if related is not None:
            body["related"] = object_reference(related) if "metadata" in related else dict(related)
        return body

    def _event_name(self, ref_name: str, seconds: float) -> str:
        """client-go's ``GenerateEventName``: ``<name>.<unix nanoseconds, hex>``, else a UUID.

        The nanoseconds never repeat within one recorder (a frozen test clock included).
        """
        nanos = max(int(seconds * 1e9), self._last_name_ns + 1)
        self._last_name_ns = nanos
        name = f"{ref_name}.{nanos:x}"
        if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
            return str(uuid.uuid4())
        return name

    async def _finish_loop(self) -> None:
        """Ends series every ``finish_time`` from the first Event (client-go's period and phase,
        so a final count is written when client-go's would be); forgets single Events every
        :data:`SWEEP_PERIOD` in between."""
        finish_time = self._series.finish_time
        next_finish = self._clock.now() + finish_time
        while True:
            await self._clock.sleep(min(SWEEP_PERIOD, next_finish - self._clock.now()))
            now = self._clock.now()
            if now < next_finish:
                self._series.forget_singles(now)
                continue
            next_finish = now + finish_time
            for write in self._series.finish(now):
                self._writer.submit(write)

    async def _refresh_loop(self) -> None:
        while True:
            await self._clock.sleep(REFRESH_TIME)
            for write in self._series.refresh():
                self._writer.submit(write)

    def _count_unsent(self, reason: UnsentReason) -> None:
        self.metrics.unsent.labels(self.reporting_controller, reason).inc()

    async def flush(self) -> None:
        """Blocks until every queued write has been attempted."""
        await self._writer.flush()

    async def close(self) -> None:
        """Flushes (at most :data:`CLOSE_FLUSH_TIMEOUT` s on the clock), then stops the writer.

        Blocks until the writer's tasks have ended; writes still queued after the timeout are
        counted as unsent (reason ``shutdown``).
        """
        with contextlib.suppress(TimeoutError):
            async with clock_timeout(self._clock, CLOSE_FLUSH_TIMEOUT):
                await self.flush()
        await self._writer.stop()
        self._sweeping = False
