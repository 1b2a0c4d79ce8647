"""The one shape of a pass: :class:`PassContext`, what every controller's pass holds and does.

Each of the three large controllers builds one context per pass, and all three have the same
shape (a test checks it):

- **name**: ``PassContext``, in the kind's ``context`` module;
- **constructor**: ``PassContext.open(request, deps, cached)``, a classmethod that parses the
  cached object once (the rule for a spec that does not parse: :mod:`.opening`);
- **now**: the wall time of the pass, read once from the injected clock when it opens; every
  timestamp the pass writes and every deadline it compares is that moment;
- **events**: ``ctx.event(event_type, reason, note, *, action=None)`` records an Event about the
  pass's object (``action`` by keyword, KubeRay's ``...Action`` names);
- **status**: held on the context and written by the pass's last step, and only if it changed
  from the status as read, with the resourceVersion read (a 409 requeues; nothing is undone).

Where a controller must differ, it says so here:

- RayCluster computes its status afresh from the cache in its status step (KubeRay's
  ``calculateStatus``) instead of editing a working copy, and its pod steps are guarded by scale
  expectations, not by own writes: a pod create is satisfied when the pod cache shows it or
  after 30 s, a delete only on NotFound.
- RayJob edits a typed working status (the pydantic model) beside the status as read
  (``original``); RayService edits the wire status; each writes only what changed.
- The small controllers (``networkpolicy``, ``raycluster-mtls``, ``raycronjob``) hold no context:
  a pass is one function that opens with :class:`~rayop.controllers.kit.opening.Opening`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from rayop.runtime.events.recorder import EventType
from rayop.runtime.reconcile import Request

__all__ = ["PassContext"]


class PassContext(Protocol):
    """What every controller's pass context has (see the module docstring)."""

    request: Request
    now: datetime

    @property
    def name(self) -> str:
        """The object's name."""
        ...

    @property
    def namespace(self) -> str:
        """The object's namespace."""
        ...

    def event(
        self, event_type: EventType, reason: str, note: str, *, action: str | None = None
    ) -> None:
        """Records an Event about the pass's object; never blocks."""
        ...
