"""A reconcile pass as an ordered list of steps, and the one way a step ends a pass early.

A step is ``async def step(ctx) -> Stop | None``: None lets the pass go on to the next step,
a :class:`Stop` ends it with a :class:`~rayop.runtime.reconcile.Result`, and raising is the error
path (the controller requeues with backoff). A pass usually ends by writing the status edits its
steps made; a step that ends it early must say, in the type, whether those edits are written
(:meth:`Stop.after_status_write`) or dropped (:meth:`Stop.discarding_status`), so an edit is
never lost without the code saying so. A phase table (one handler per state) uses the same shape.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rayop.runtime.reconcile import Result

C = TypeVar("C")


class StatusEdits(enum.Enum):
    """What happens to the status edits of a pass that a step ends early."""

    WRITE = "write"
    """They are written (when they changed anything) before the result is returned."""
    DISCARD = "discard"
    """They are dropped on purpose: the step wrote what it needed, or nothing may be written."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Ends a pass early with ``result``; ``status`` says what happens to its status edits."""

    result: Result
    status: StatusEdits

    @classmethod
    def after_status_write(cls, result: Result | None = None) -> Stop:
        """Ends the pass with ``result`` (default: no requeue) after writing its status edits."""
        return cls(result if result is not None else Result(), StatusEdits.WRITE)

    @classmethod
    def discarding_status(cls, result: Result | None = None) -> Stop:
        """Ends the pass with ``result`` (default: no requeue), dropping its status edits."""
        return cls(result if result is not None else Result(), StatusEdits.DISCARD)


Step = Callable[[C], Awaitable[Stop | None]]
"""One step of a pass over a context of type ``C``."""


async def run_steps(steps: Sequence[Step[C]], ctx: C) -> Stop | None:
    """Runs ``steps`` in order on ``ctx`` until one returns a :class:`Stop`, and returns it.

    Returns None when every step went on. Blocks on whatever the steps await; an exception from
    a step propagates at once (the remaining steps do not run).
    """
    for step in steps:
        stop = await step(ctx)
        if stop is not None:
            return stop
    return None
