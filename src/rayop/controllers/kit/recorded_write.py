"""One write a controller makes, with KubeRay's event about how it went."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from rayop.kube.errors import AlreadyExists
from rayop.runtime.events.recorder import EventType

__all__ = ["RecordsEvents", "create_with_events", "write_with_events"]

T = TypeVar("T")


class RecordsEvents(Protocol):
    """Records Events about one object: a pass context, or any holder of an object's events."""

    def event(
        self, event_type: EventType, reason: str, note: str, *, action: str | None = None
    ) -> None:
        """Records an Event about the object; never blocks."""
        ...


async def write_with_events(
    ctx: RecordsEvents,
    write: Awaitable[T],
    *,
    done: tuple[str, str],
    failed: tuple[str, str],
    action: str | None = None,
    passing: tuple[type[Exception], ...] = (),
) -> T:
    """Awaits ``write`` and records an Event about the pass's object; returns what it returned.

    Args:
        ctx: The pass (or whatever records the object's events).
        write: The API call (or any awaitable) to make.
        done: The reason and note of the Normal event recorded when it succeeds.
        failed: The reason and the start of the note of the Warning event recorded when it
            fails; the error's text is appended to the note.
        action: The events' action (the reason when None).
        passing: Errors the caller handles itself (a create that finds the object there, a
            delete that finds it gone): they propagate with no event.

    Raises:
        Exception: whatever ``write`` raised (after the Warning event unless it is ``passing``).
    """
    try:
        result = await write
    except passing:
        raise
    except Exception as err:
        reason, note = failed
        ctx.event("Warning", reason, f"{note}{err}", action=action)
        raise
    reason, note = done
    ctx.event("Normal", reason, note, action=action)
    return result


async def create_with_events(
    ctx: RecordsEvents,
    create: Awaitable[object],
    *,
    done: tuple[str, str],
    failed: tuple[str, str],
    action: str | None = None,
) -> None:
    """Awaits ``create`` as :func:`write_with_events` does; an object already there
    (AlreadyExists) counts as done, with no event.

    Raises:
        Exception: whatever else ``create`` raised (after the Warning event).
    """
    with contextlib.suppress(AlreadyExists):
        await write_with_events(
            ctx, create, done=done, failed=failed, action=action, passing=(AlreadyExists,)
        )
