"""The flow a request belongs to: the object it is made for, as a context variable.

The client's token bucket (:class:`~rayop.kube.throttle.TokenBucket`) serves its waiting
requests round-robin across flows, so one object with a long backlog of requests (a big worker
group's pod creates) does not hold back another object's one or two. The controller's worker
sets the flow for each pass (its key), and a background task started for an object runs with
that object's flow (tasks copy the context they are created in). Requests made outside any pass
(informers, the event broadcaster, leader election) carry no flow and share one.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

current_flow: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "rayop_request_flow", default=None
)
"""The flow of the requests made in this context; None for "no object"."""


@contextlib.contextmanager
def request_flow(flow: str | None) -> Iterator[None]:
    """Makes ``flow`` the flow of every request made inside the block (and of the tasks created
    there)."""
    token = current_flow.set(flow)
    try:
        yield
    finally:
        current_flow.reset(token)
