"""Watch-list (``sendInitialEvents``): a watch that starts with the current state, then a marker.

kube-apiserver v1.37 serves it (the WatchList feature, on by default), and client-go's
reflectors use it instead of LIST then WATCH. The watch sends an ADDED event for every
current object, then a BOOKMARK carrying the annotation ``k8s.io/initial-events-end: "true"``
at the resourceVersion of that state, then live events. The options are validated with
kube-apiserver's rules and messages: ``sendInitialEvents`` requires
``resourceVersionMatch=NotOlderThan``, and ``resourceVersionMatch`` on a watch requires
``sendInitialEvents``.
"""

from __future__ import annotations

from collections.abc import Mapping

from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.watch_events import Event, WatchStream

__all__ = ["INITIAL_EVENTS_END", "InitialEventsStream", "validate_watch_options"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def validate_watch_options(query: Mapping[str, str]) -> bool | None:
    """Returns sendInitialEvents (None when not given) after checking the watch's options.

    Raises:
        StatusError: 422 Invalid with kube-apiserver's causes.
    """
    raw = query.get("sendInitialEvents")
    send = None if raw is None else raw in ("true", "1", "True")
    match = query.get("resourceVersionMatch", "")
    causes: list[tuple[str, str, str]] = []
    if send is not None and match != "NotOlderThan":
        causes.append(
            (
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match:
        if send is None:
            causes.append(
                (
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided",
                )
            )
        if match != "NotOlderThan":
            causes.append(
                (
                    "resourceVersionMatch",
                    "FieldValueNotSupported",
                    f'Unsupported value: "{match}": supported values: "NotOlderThan"',
                )
            )
    if causes:
        raise se.invalid("ListOptions", "meta.k8s.io", "", causes)
    return send


class InitialEventsStream:
    """A watch stream that sends the initial-events-end bookmark after the initial ADDEDs.

    Wraps a stream opened on the current state (synthetic ADDED events); ``rv`` is the
    resourceVersion of that state.
    """

    def __init__(self, stream: WatchStream, shown: ResourceInfo, rv: int, *, marker: bool):
        self._stream = stream
        self._initial_left = stream.pending()  # nothing live can be buffered before a yield
        self._marker: Event | None = None
        if marker:
            obj = {
                "kind": shown.kind,
                "apiVersion": shown.api_version,
                "metadata": {
                    "resourceVersion": str(rv),
                    "annotations": {INITIAL_EVENTS_END: "true"},
                },
            }
            self._marker = Event("BOOKMARK", obj, rv, 0.0)

    def pending(self) -> int:
        """How many events can be read without waiting (the marker included)."""
        return self._stream.pending() + (1 if self._marker is not None else 0)

    async def next(self, timeout: float | None = None) -> Event | None:
        """The next event: the initial ones, the marker, then live ones (blocks)."""
        if self._initial_left == 0 and self._marker is not None:
            marker, self._marker = self._marker, None
            return marker
        ev = await self._stream.next(timeout)
        if ev is not None and self._initial_left:
            self._initial_left -= 1
        return ev

    def bookmark(self) -> Event:
        """A BOOKMARK at the current resourceVersion (when nothing is pending)."""
        return self._stream.bookmark()

    def close(self) -> None:
        """Stops the stream."""
        self._stream.close()
