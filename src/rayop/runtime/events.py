"""Records ``events.k8s.io/v1`` Events about objects, aggregating repeats into a series.

:meth:`EventRecorder.event` never blocks and never raises: it queues the write for a background
task (owned by the recorder, ended by :meth:`EventRecorder.close`), so a failing or slow API
server cannot break a reconcile. An event isomorphic to one recorded less than ``series_window``
seconds earlier (same regarding object, type, reason, action and note) does not create a new
Event; the existing one gets ``series.count`` incremented and ``series.lastObservedTime`` set,
with a merge patch. Timestamps are the injected clock's wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from rayop.kube.clock import micro_time
from rayop.kube.resources import EVENTS
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.supervisor import TaskSupervisor
from rayop.runtime.timeouts import clock_timeout

log = logging.getLogger(__name__)

MAX_NOTE_LENGTH = 1024
MAX_PENDING_WRITES = 1000
CLOSE_FLUSH_TIMEOUT = 5.0
"""Seconds :meth:`EventRecorder.close` waits for queued writes."""

EventType = Literal["Normal", "Warning"]


class EventClient(Protocol):
    """The part of :class:`rayop.kube.client.KubeClient` the recorder uses."""

    async def create(
        self, res: Any, obj: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        res: Any,
        name: str,
        body: Any,
        *,
        namespace: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    count: int
    last_seen: float


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
    """Writes Events for one reporting controller; see the module docstring."""

    def __init__(
        self,
        client: EventClient,
        *,
        reporting_controller: str,
        reporting_instance: str | None = None,
        series_window: float = 360.0,
        clock: Clock = MONOTONIC,
    ) -> None:
        self._client = client
        self.reporting_controller = reporting_controller
        self.reporting_instance = (
            reporting_instance or f"{reporting_controller}-{socket.gethostname()}"
        )
        self._window = series_window
        self._clock = clock
        self._series: dict[tuple[str, ...], _Series] = {}
        self._pending: asyncio.Queue[tuple[str, _Series, dict[str, Any]]] = asyncio.Queue()
        self._writer = TaskSupervisor(f"event recorder {reporting_controller}")
        self.dropped = 0
        """Events dropped because too many writes were pending."""

    def event(
        self,
        regarding: Mapping[str, Any],
        event_type: EventType,
        reason: str,
        note: str,
        *,
        action: str | None = None,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        """Queues an Event about ``regarding`` (an object or object reference); never blocks.

        Args:
            regarding: The object the event is about (its metadata is used for the reference).
            event_type: ``"Normal"`` or ``"Warning"``.
            reason: Short CamelCase machine-readable reason.
            note: Human-readable description (truncated to 1 KiB).
            action: What the controller did; defaults to ``reason``.
            related: A second object involved, if any.
        """
        try:
            self._record(
                regarding, event_type, reason, note[:MAX_NOTE_LENGTH], action or reason, related
            )
        except Exception:
            log.exception("failed to record event %s", reason)

    def _record(
        self,
        regarding: Mapping[str, Any],
        event_type: str,
        reason: str,
        note: str,
        action: str,
        related: Mapping[str, Any] | None,
    ) -> None:
        ref = object_reference(regarding) if "metadata" in regarding else dict(regarding)
        namespace = ref.get("namespace") or "default"
        key = (
            str(ref.get("uid") or ""), str(ref.get("kind")), namespace, str(ref.get("name")),
            event_type, reason, action, note,
        )  # fmt: skip
        now = self._clock.now()
        now_text = micro_time(self._clock.wall())
        self._expire(now)
        series = self._series.get(key)
        if series is not None and now - series.last_seen < self._window:
            series.count += 1
            series.last_seen = now
            patch = {"series": {"count": series.count, "lastObservedTime": now_text}}
            self._enqueue("patch", series, patch)
            return
        name = f"{ref.get('name')}.{uuid.uuid4().hex[:16]}"
        series = _Series(name=name, namespace=namespace, count=1, last_seen=now)
        self._series[key] = series
        body: dict[str, Any] = {
            "apiVersion": EVENTS.api_version,
            "kind": EVENTS.kind,
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": now_text,
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "note": note,
            "type": event_type,
            "regarding": ref,
        }
        if related is not None:
            body["related"] = object_reference(related) if "metadata" in related else dict(related)
        self._enqueue("create", series, body)

    def _expire(self, now: float) -> None:
        if len(self._series) < 4096:
            return
        for key in [k for k, s in self._series.items() if now - s.last_seen >= self._window]:
            del self._series[key]

    def _enqueue(self, verb: str, series: _Series, body: dict[str, Any]) -> None:
        if self._pending.qsize() >= MAX_PENDING_WRITES:
            self.dropped += 1
            return
        self._pending.put_nowait((verb, series, body))
        if not self._writer.running:
            self._writer.spawn(self._write_loop(), name="writer")

    async def _write_loop(self) -> None:
        while True:
            verb, series, body = await self._pending.get()
            try:
                if verb == "create":
                    await self._client.create(EVENTS, body, namespace=series.namespace)
                else:
                    await self._client.patch(
                        EVENTS, series.name, body, namespace=series.namespace, patch_type="merge"
                    )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("failed to write event %s/%s: %r", series.namespace, series.name, exc)
                self._forget(series)
            finally:
                self._pending.task_done()

    def _forget(self, series: _Series) -> None:
        for key in [k for k, s in self._series.items() if s is series]:
            del self._series[key]

    async def flush(self) -> None:
        """Blocks until every queued write has been attempted."""
        if self._writer.running:
            await self._pending.join()

    async def close(self) -> None:
        """Flushes (at most :data:`CLOSE_FLUSH_TIMEOUT` s on the clock), then stops the writer.

        Blocks until the writer task has ended; writes still queued after the timeout are dropped.
        """
        with contextlib.suppress(TimeoutError):
            async with clock_timeout(self._clock, CLOSE_FLUSH_TIMEOUT):
                await self.flush()
        await self._writer.stop()
