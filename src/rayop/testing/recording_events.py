"""A recording event sink for unit tests of a pass: :class:`RecordingEventSink`.

It satisfies :class:`rayop.runtime.events.recorder.EventSink` and keeps every Event a pass records, in
order, so a test asserts on reasons, types, notes and actions instead of reading the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rayop.runtime.events.recorder import EventType

__all__ = ["RecordedEvent", "RecordingEventSink"]


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One Event as recorded: about whom (kind, namespace, name), type, reason, note, action."""

    kind: str
    namespace: str
    name: str
    type: EventType
    reason: str
    note: str
    action: str | None


@dataclass
class RecordingEventSink:
    """Keeps every Event recorded through it (see the module docstring)."""

    recorded: list[RecordedEvent] = field(default_factory=list)

    def event(self, regarding: Mapping[str, Any], event_type: EventType, reason: str, note: str, *,
              action: str | None = None) -> None:
        """Records one Event about ``regarding``."""
        meta = regarding.get("metadata") or {}
        self.recorded.append(
            RecordedEvent(
                kind=str(regarding.get("kind") or ""),
                namespace=str(meta.get("namespace") or ""),
                name=str(meta.get("name") or ""),
                type=event_type,
                reason=reason,
                note=note,
                action=action,
            )
        )

    def reasons(self) -> list[str]:
        """Returns the reasons of the recorded Events, in order."""
        return [e.reason for e in self.recorded]

    def notes(self, reason: str | None = None) -> list[str]:
        """Returns the notes of the recorded Events (of one reason, or all), in order."""
        return [e.note for e in self.recorded if reason in (None, e.reason)]
