"""An account of each object's last reconcile passes, kept in memory: :class:`DecisionLog`.

A controller given a log opens a :class:`PassAccount` around each pass and makes it the current
one (a context variable), so code anywhere in the pass can say what it decided with the
module-level functions :func:`note_wait` (the pass held back: expectations not met, an own write
not yet seen, a dependency not answering, a gate), :func:`note_write` (a write it sent and how it
went) and :func:`note_event` (an Event it recorded: the why of a write). Outside a pass they do
nothing. When the pass ends the controller closes the account with its outcome (done, requeued
after some seconds, an error and its backoff, a terminal error) and the log keeps it.

Bounded twice: the last ``per_object`` passes of each object (per controller), and at most
``max_objects`` objects, the least recently reconciled dropped first; a pass keeps at most
:data:`MAX_NOTES` notes and counts the rest. A quiet pass (no note, no error) that ends as the
pass kept before it did is folded into that one (counted, its time kept), so a periodic requeue
that finds nothing to do does not push the passes that acted out of the ring. Besides, the last
``acted`` passes that recorded an Event are kept apart, however many passes followed them. Nothing is written to the API server (a write per
pass would double the request volume); :meth:`DecisionLog.explain` gives the record as JSON for
the operator's metrics server to serve (``/debug/decisions``).

Cost per pass: two context-variable operations, one small object and a ring append (the
benchmark ``benchmarks/bench_decisions.py`` measures it); per note, one context-variable read
and a list append.
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from rayop.runtime.reconcile import Result, is_terminal, retry_delay

NoteKind = Literal["wait", "write", "event"]
"""What a note says: the pass held back (``wait``), sent a write, or recorded an Event."""

MAX_NOTES: Final[int] = 32
"""Notes kept per pass; later ones are only counted."""

DEFAULT_PER_OBJECT: Final[int] = 6
"""Passes kept per object and controller."""

DEFAULT_ACTED: Final[int] = 3
"""Passes that recorded an Event (a create, a delete, a refusal: what KubeRay tells users
about) kept per object and controller besides the last ones, so a burst of status writes does
not push them out."""

DEFAULT_MAX_OBJECTS: Final[int] = 4096
"""Objects kept; the least recently reconciled is dropped past it."""

Outcome = Literal["done", "requeue", "requeue_after", "retry_after", "error", "terminal"]
"""How a pass ended, as the controller handles it (see :mod:`rayop.runtime.reconcile`)."""


@dataclass(slots=True)
class PassAccount:
    """One pass: who ran it on what, when, its notes, and (once closed) how it ended.

    ``next_in`` is the seconds after the pass's end at which the object is looked at again for
    a timed requeue or a retry (None: on the next change of the object or of what it owns, or
    after the rate limiter's backoff, which ``retries`` counts).
    """

    controller: str
    kind: str
    namespace: str
    name: str
    started: datetime
    notes: list[tuple[NoteKind, str]] = field(default_factory=list)
    dropped: int = 0
    seconds: float = 0.0
    outcome: Outcome = "done"
    next_in: float | None = None
    retries: int = 0
    error: str = ""
    closed: bool = False
    repeats: int = 0
    """Quiet passes folded into this one (see the module docstring)."""
    last_started: datetime | None = None
    """When the last of them started."""
    """Set when the pass ended: a task the pass started that outlives it notes nothing more."""

    def note(self, kind: NoteKind, text: str) -> None:
        """Adds a note (counted only, past :data:`MAX_NOTES`); never blocks."""
        if self.closed:
            return
        if len(self.notes) < MAX_NOTES:
            self.notes.append((kind, text))
        else:
            self.dropped += 1

    def settle(self, result: Result | None, error: Exception | None, seconds: float) -> None:
        """Records how the pass ended: its ``result`` or ``error``, after ``seconds``."""
        self.seconds = seconds
        if error is not None:
            self.error = str(error) or type(error).__name__
            delay = retry_delay(error)
            if is_terminal(error):
                self.outcome = "terminal"
            elif delay is not None:
                self.outcome, self.next_in = "retry_after", delay
            else:
                self.outcome = "error"
        elif result is not None and result.requeue_after is not None:
            self.outcome, self.next_in = "requeue_after", result.requeue_after
        elif result is not None and result.requeue:
            self.outcome = "requeue"

    def as_json(self) -> dict[str, Any]:
        """Returns the pass as a JSON-ready dict (the shape ``rayop explain`` reads)."""
        out: dict[str, Any] = {
            "controller": self.controller,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "started": self.started.isoformat(timespec="milliseconds"),
            "seconds": round(self.seconds, 6),
            "waited": [text for kind, text in self.notes if kind == "wait"],
            "wrote": [text for kind, text in self.notes if kind == "write"],
            "events": [text for kind, text in self.notes if kind == "event"],
            "outcome": self.outcome,
            "nextIn": self.next_in,
        }
        if self.retries:
            out["retries"] = self.retries
        if self.error:
            out["error"] = self.error
        if self.dropped:
            out["notesDropped"] = self.dropped
        if self.repeats:
            out["repeated"] = self.repeats
            assert self.last_started is not None
            out["lastStarted"] = self.last_started.isoformat(timespec="milliseconds")
        return out


_current: contextvars.ContextVar[PassAccount | None] = contextvars.ContextVar(
    "current_pass_account", default=None
)


def current_account() -> PassAccount | None:
    """Returns the account of the pass running in this task, or None outside one."""
    return _current.get()


def note_wait(text: str) -> None:
    """Notes that the current pass held back, and for what; nothing outside a pass."""
    account = _current.get()
    if account is not None:
        account.note("wait", text)


def note_write(text: str) -> None:
    """Notes a write the current pass sent; nothing outside a pass."""
    account = _current.get()
    if account is not None:
        account.note("write", text)


def note_event(text: str) -> None:
    """Notes an Event the current pass recorded; nothing outside a pass."""
    account = _current.get()
    if account is not None:
        account.note("event", text)


def note_client_write(method: str, path: str, answer: dict[str, Any] | None, error: str) -> None:
    """Notes an API write (``method`` on ``path``) of the current pass and how it went.

    Shaped for :attr:`rayop.kube.client.KubeClient.on_write`: ``answer`` is the object the
    server returned (its name completes a create's path), ``error`` the failure's text.
    """
    account = _current.get()
    if account is None:
        return
    if answer is not None and method == "POST":
        name = (answer.get("metadata") or {}).get("name")
        if name:
            path = f"{path}/{name}"
    account.note("write", f"{method} {path}: {error or 'ok'}")


@dataclass(slots=True)
class _Kept:
    """One object's passes: the last ones, and those that acted before them."""

    last: deque[PassAccount]
    acted: deque[PassAccount]


class DecisionLog:
    """The last passes of each object, per controller; never blocks.

    Args:
        per_object: Passes kept per (controller, object).
        max_objects: (controller, object) pairs kept; the least recently reconciled goes first.
    """

    def __init__(
        self,
        *,
        per_object: int = DEFAULT_PER_OBJECT,
        acted: int = DEFAULT_ACTED,
        max_objects: int = DEFAULT_MAX_OBJECTS,
    ) -> None:
        if per_object < 1 or max_objects < 1 or acted < 0:
            raise ValueError("a decision log keeps at least one pass of one object")
        self.per_object = per_object
        self.acted = acted
        self.max_objects = max_objects
        self._rings: OrderedDict[tuple[str, str, str], _Kept] = OrderedDict()

    def open(self, account: PassAccount) -> contextvars.Token[PassAccount | None]:
        """Makes ``account`` the current pass's; hand the token to :meth:`close`."""
        return _current.set(account)

    def close(self, account: PassAccount, token: contextvars.Token[PassAccount | None]) -> None:
        """Ends the current pass's account and keeps it (dropping the oldest beyond bounds)."""
        _current.reset(token)
        account.closed = True
        key = (account.controller, account.namespace, account.name)
        kept = self._rings.get(key)
        if kept is None:
            kept = self._rings[key] = _Kept(deque(maxlen=self.per_object), deque(maxlen=self.acted))
            if len(self._rings) > self.max_objects:
                self._rings.popitem(last=False)
        else:
            self._rings.move_to_end(key)
            last = kept.last
            if last and _alike_and_quiet(last[-1], account):
                last[-1].repeats += 1
                last[-1].last_started = account.started
                return
        if len(kept.last) == kept.last.maxlen and kept.acted.maxlen:
            leaving = kept.last[0]
            if any(kind == "event" for kind, _ in leaving.notes):
                kept.acted.append(leaving)
        kept.last.append(account)

    def passes(self, namespace: str, name: str, kind: str | None = None) -> Iterator[PassAccount]:
        """Yields the kept passes of the object ``namespace/name`` (of ``kind`` if given), by
        controller, oldest first (the acted ones before the last ones)."""
        for (_controller, ns, nm), kept in list(self._rings.items()):
            if ns == namespace and nm == name:
                for account in (*kept.acted, *kept.last):
                    if kind is None or account.kind.lower() == kind.lower():
                        yield account

    def explain(self, namespace: str, name: str, kind: str | None = None) -> list[dict[str, Any]]:
        """Returns the kept passes of one object as JSON-ready dicts, oldest first."""
        found = sorted(self.passes(namespace, name, kind), key=lambda a: a.started)
        return [account.as_json() for account in found]

    def __len__(self) -> int:
        """The number of (controller, object) pairs kept."""
        return len(self._rings)


def _alike_and_quiet(kept: PassAccount, new: PassAccount) -> bool:
    """Tells whether ``new`` only repeats ``kept``: neither noted anything, both ended alike."""
    return (
        not new.notes
        and not kept.notes
        and not new.error
        and not kept.error
        and new.outcome == kept.outcome
        and new.next_in == kept.next_in
        and new.controller == kept.controller
    )
