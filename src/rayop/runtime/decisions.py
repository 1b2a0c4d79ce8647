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
``acted`` passes that recorded an Event are kept apart, however many passes followed them.
Nothing is written to the API server (a write per pass would double the request volume);
:meth:`DecisionLog.explain` gives the record as JSON for the operator's metrics server to serve
(``/debug/decisions``). A log may also hand each pass that waited to a listener
(:meth:`DecisionLog.report_waits`), with :func:`wait_summary` as its one line: the operator's
``--decision-events`` records it as an Event, which the recorder folds into one series per
object.

Cost per pass: two context-variable operations, one small object and a list append (the
benchmark ``benchmarks/decisions_overhead.py`` measures it); per note, one context-variable read,
a tuple and a list append. A kept pass's notes are packed when it closes, deflated against
dictionaries learned from earlier notes (the informers' codec,
:class:`~rayop.runtime.informers.compact_store.ObjectCodec`): a pass that created a cluster's
pods costs about 0.7 KB kept, not 2.1 KB (``tests/runtime/test_decisions.py``); packing one
costs about 5 µs for 3 notes; an object's full ring of acting passes holds 3.1 KB, not 6.3 KB
(``benchmarks/decisions_overhead.py``). The closed pass itself is kept as one bytes record
(:mod:`rayop.runtime.decision_records`) and read back into a :class:`PassAccount` when asked
for: a quiet pass, with its object's key, costs about 0.26 KB kept, not 0.44 KB (traced, in
``tests/runtime/test_decisions.py``), and a log at its bound of objects is a cost every process
pays whatever share of a fleet it holds.
"""

from __future__ import annotations

import contextvars
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any, Final, Literal

import orjson

from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.decision_records import ACTED, EVENTED, set_aside
from rayop.runtime.decision_records import flags as record_flags
from rayop.runtime.decision_records import pack as pack_record
from rayop.runtime.decision_records import quiet_alike as records_quiet_alike
from rayop.runtime.decision_records import repeated as records_repeated
from rayop.runtime.decision_records import unpack as unpack_record
from rayop.runtime.informers.compact_store import ObjectCodec
from rayop.runtime.reconcile import Result, is_terminal, retry_delay

log = logging.getLogger(__name__)

NoteKind = Literal["wait", "write", "event"]
"""What a note says: the pass held back (``wait``), sent a write, or recorded an Event."""

MAX_NOTES: Final[int] = 32
"""Notes kept per pass; later ones are only counted."""

DEFAULT_PER_OBJECT: Final[int] = 5
"""Passes kept per object and controller."""

DEFAULT_ACTED: Final[int] = 2
"""Passes that recorded an Event (a create, a delete, a refusal: what an operator tells users
about) kept per object and controller besides the last ones, so a burst of status writes does
not push them out."""

DEFAULT_MAX_OBJECTS: Final[int] = 4096
"""Objects kept; the least recently reconciled is dropped past it."""

_SEP: Final[str] = "\x00"
"""Joins a kept object's controller, kind, namespace and name into its key (no name holds it)."""

Outcome = Literal["done", "requeue", "requeue_after", "retry_after", "error", "terminal"]
"""How a pass ended, as the controller handles it (see :mod:`rayop.runtime.reconcile`)."""


class PassAccount:
    """One pass: who ran it on what, when, its notes, and (once closed) how it ended.

    ``started`` is the pass's start on the controller's monotonic clock (the log turns it into
    wall time when asked). ``next_in`` is the seconds after the pass's end at which the object
    is looked at again for a timed requeue or a retry (None: on the next change of the object or
    of what it owns, or after the rate limiter's backoff, which ``retries`` counts).
    ``repeats`` counts the quiet passes folded into this one, the last of which started at
    ``last_started``. ``evented`` says whether it recorded an Event. Once ``closed`` (the pass
    ended), a task the pass started that outlives it notes nothing more.
    """

    __slots__ = (
        "_codec",
        "_packed",
        "closed",
        "controller",
        "dropped",
        "error",
        "evented",
        "kind",
        "last_started",
        "name",
        "namespace",
        "next_in",
        "notes",
        "outcome",
        "repeats",
        "retries",
        "seconds",
        "started",
    )

    def __init__(self, controller: str, kind: str, namespace: str, name: str, started: float):
        self.controller = controller
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.started = started
        self.notes: list[tuple[NoteKind, str]] | None = None
        self._packed: bytes | None = None
        self._codec: ObjectCodec | None = None
        self.dropped = 0
        self.seconds = 0.0
        self.outcome: Outcome = "done"
        self.next_in: float | None = None
        self.retries = 0
        self.error = ""
        self.closed = False
        self.evented = False
        self.repeats = 0
        self.last_started = started

    def note(self, kind: NoteKind, text: str) -> None:
        """Adds a note (counted only, past :data:`MAX_NOTES`); never blocks."""
        if self.closed:
            return
        if kind == "event":
            self.evented = True
        notes = self.notes
        if notes is None:
            self.notes = [(kind, text)]
        elif len(notes) < MAX_NOTES:
            notes.append((kind, text))
        else:
            self.dropped += 1

    @property
    def quiet(self) -> bool:
        """Whether the pass noted nothing."""
        return self.notes is None and self._packed is None

    def all_notes(self) -> list[tuple[NoteKind, str]]:
        """Returns every note kept, in order: ``(kind, text)``."""
        if self._packed is not None and self._codec is not None:
            packed: list[tuple[NoteKind, str]] = [
                (kind, text)
                for kind, text in orjson.loads(self._codec.decode_json(self._packed))["n"]
            ]
            return packed
        return list(self.notes or ())

    def noted(self, kind: NoteKind) -> list[str]:
        """Returns the texts of the notes of ``kind``, in order."""
        return [text for k, text in self.all_notes() if k == kind]

    def pack(self, codec: ObjectCodec) -> None:
        """Keeps the notes of a closed pass compressed by ``codec`` (:meth:`noted` reads them
        back): a kept pass's notes (API paths, Event texts) cost about 1 KB as strings and
        tuples, and a log keeps thousands of passes."""
        if self.closed and self.notes:
            self._packed = codec.encode({"n": self.notes})
            self._codec = codec
            self.notes = None

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

    def as_json(self, wall: Callable[[float], datetime]) -> dict[str, Any]:
        """Returns the pass as a JSON-ready dict (the shape ``rayop explain`` reads); ``wall``
        turns a monotonic time into wall time."""
        notes = self.all_notes()  # packed notes are decoded once, not once per kind
        out: dict[str, Any] = {
            "controller": self.controller,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "started": wall(self.started).isoformat(timespec="milliseconds"),
            "seconds": round(self.seconds, 6),
            "waited": [text for kind, text in notes if kind == "wait"],
            "wrote": [text for kind, text in notes if kind == "write"],
            "events": [text for kind, text in notes if kind == "event"],
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
            out["lastStarted"] = wall(self.last_started).isoformat(timespec="milliseconds")
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


def next_look(outcome: str, next_in: float | None, retries: int = 0) -> str:
    """Says when the operator looks at an object again after a pass that ended with
    ``outcome`` (an :data:`Outcome`), ``next_in`` seconds and ``retries`` as the pass's
    account keeps them."""
    if outcome == "requeue_after":
        return f"again in {next_in:g} s (timed requeue), or on the next change"
    if outcome == "retry_after":
        return f"again in {next_in:g} s (retry after an error)"
    if outcome in ("error", "requeue"):
        return f"again after the rate limiter's backoff (retry {retries}), or on the next change"
    if outcome == "terminal":
        return "not again until the object changes (terminal error)"
    return "on the next change of the object or of what it owns"


def wait_summary(account: PassAccount) -> str | None:
    """The one line of a pass that waited: what for (the first wait, and how many more) and
    when the operator looks again; None when the pass did not wait."""
    waits = account.noted("wait")
    if not waits:
        return None
    more = f" (and {len(waits) - 1} more)" if len(waits) > 1 else ""
    when = next_look(account.outcome, account.next_in, account.retries)
    return f"waiting: {waits[0]}{more}; next look: {when}"


class DecisionLog:
    """The last passes of each object, per controller; never blocks.

    Args:
        per_object: Passes kept per (controller, object).
        acted: Passes that recorded an Event kept besides those (see the module docstring).
        max_objects: (controller, object) pairs kept; the least recently reconciled goes first.
        clock: The controllers' clock: the passes' start times are its ``now()``.
    """

    def __init__(
        self,
        *,
        per_object: int = DEFAULT_PER_OBJECT,
        acted: int = DEFAULT_ACTED,
        max_objects: int = DEFAULT_MAX_OBJECTS,
        clock: Clock = MONOTONIC,
    ) -> None:
        if per_object < 1 or max_objects < 1 or acted < 0:
            raise ValueError("a decision log keeps at least one pass of one object")
        self.per_object = per_object
        self.acted = acted
        self.max_objects = max_objects
        self.clock = clock
        self._kept: OrderedDict[str, bytes | list[bytes]] = OrderedDict()
        """Per controller, kind and object (joined by :data:`_SEP`): its one record, or its
        records oldest first, those set aside as acted before the last ones."""
        self._codec = ObjectCodec()
        self._on_wait: Callable[[PassAccount], None] | None = None

    def report_waits(self, listener: Callable[[PassAccount], None]) -> None:
        """Hands every pass that waited (a ``wait`` note) to ``listener`` once it is closed;
        the listener must not block (it runs on the pass's worker); what it raises is logged."""
        self._on_wait = listener

    def open(self, account: PassAccount) -> contextvars.Token[PassAccount | None]:
        """Makes ``account`` the current pass's; hand the token to :meth:`close`."""
        return _current.set(account)

    def close(self, account: PassAccount, token: contextvars.Token[PassAccount | None]) -> None:
        """Ends the current pass's account and keeps it (dropping the oldest beyond bounds)."""
        _current.reset(token)
        account.closed = True
        if self._on_wait is not None and not account.quiet and account.noted("wait"):
            try:
                self._on_wait(account)
            except Exception:  # the listener's failure must not end the pass's worker
                log.exception("the listener of waiting passes failed on %s", account.name)
        key = _SEP.join((account.controller, account.kind, account.namespace, account.name))
        kept = self._kept.get(key)
        if kept is None:
            self._kept[key] = self._record(account)
            if len(self._kept) > self.max_objects:
                self._kept.popitem(last=False)
            return
        self._kept.move_to_end(key)
        records = [kept] if isinstance(kept, bytes) else kept
        if (
            account.quiet
            and not account.error
            and records_quiet_alike(records[-1], account.outcome, account.next_in)
        ):
            records[-1] = records_repeated(records[-1], account.started)
            self._kept[key] = records if len(records) > 1 else records[0]
            return
        records.append(self._record(account))
        first_last = sum(1 for record in records if record_flags(record) & ACTED)
        if len(records) - first_last > self.per_object:
            leaving = records.pop(first_last)
            if self.acted and record_flags(leaving) & EVENTED:
                records.insert(first_last, set_aside(leaving))
                if first_last + 1 > self.acted:
                    del records[0]
        self._kept[key] = records

    def _record(self, account: PassAccount) -> bytes:
        account.pack(self._codec)
        return pack_record(
            started=account.started,
            last_started=account.last_started,
            seconds=account.seconds,
            next_in=account.next_in,
            retries=account.retries,
            repeats=account.repeats,
            dropped=account.dropped,
            outcome=account.outcome,
            flags=EVENTED if account.evented else 0,
            error=account.error,
            notes=account._packed,
        )

    def passes(self, namespace: str, name: str, kind: str | None = None) -> Iterator[PassAccount]:
        """Yields the kept passes of the object ``namespace/name`` (of ``kind`` if given), by
        controller, oldest first (the acted ones before the last ones), read back from their
        records."""
        for key, kept in list(self._kept.items()):
            controller, its_kind, ns, nm = key.split(_SEP)
            if ns != namespace or nm != name:
                continue
            if kind is not None and its_kind.lower() != kind.lower():
                continue
            for record in [kept] if isinstance(kept, bytes) else kept:
                yield self._account(controller, its_kind, ns, nm, record)

    def _account(self, controller: str, kind: str, ns: str, name: str, record: bytes) -> PassAccount:
        fields = unpack_record(record)
        account = PassAccount(controller, kind, ns, name, fields.started)
        account.last_started = fields.last_started
        account.seconds = fields.seconds
        account.next_in = fields.next_in
        account.retries = fields.retries
        account.repeats = fields.repeats
        account.dropped = fields.dropped
        account.outcome = fields.outcome  # type: ignore[assignment]
        account.evented = bool(fields.flags & EVENTED)
        account.error = fields.error
        if fields.notes is not None:
            account._packed, account._codec = fields.notes, self._codec
        account.closed = True
        return account

    def records(self) -> int:
        """The number of passes kept (the records of every object)."""
        return sum(1 if isinstance(kept, bytes) else len(kept) for kept in self._kept.values())

    def explain(self, namespace: str, name: str, kind: str | None = None) -> list[dict[str, Any]]:
        """Returns the kept passes of one object as JSON-ready dicts, oldest first."""
        clock = self.clock
        now, wall_now = clock.now(), clock.wall()

        def wall(monotonic: float) -> datetime:
            return wall_now - timedelta(seconds=now - monotonic)

        found = sorted(self.passes(namespace, name, kind), key=lambda a: a.started)
        return [account.as_json(wall) for account in found]

    def __len__(self) -> int:
        """The number of (controller, object) pairs kept."""
        return len(self._kept)

