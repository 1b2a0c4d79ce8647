"""Hypothesis-generated schedules against the priority queue, checked by a model of §1.5.

A driver task performs a generated schedule of adds (with random delay, rate limiting and
priority) / forget / release (the worker holding an item calls done) / clock steps / cancelling a
blocked worker / shut_down, while two worker tasks loop on get_with_priority and wait for their
release. Every call and every item a worker receives is appended to one log in the order it
happened, and the log is replayed through a plain model: each get must return the model's best
ready, unlocked entry with its priority (so never two holders of one key, and adds during
processing collapse into one more processing), ``len`` and ``workqueue_depth`` per priority must
match, no worker may sit idle while
an entry is available, nothing is handed out after shutdown, and, when the schedule did not shut
the queue down, everything added is handed out once the clock has moved past every delay.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.queues.priority import PriorityQueue
from rayop.runtime.queues.rate_limiters import ItemExponentialFailureRateLimiter
from rayop.testing.clock import FakeClock

from .queue_schedule import WORKERS, Event, ScheduleHarness

KEYS = ["a", "b", "c", "d"]


def limiter() -> ItemExponentialFailureRateLimiter:
    return ItemExponentialFailureRateLimiter(0.5, 4.0)


@dataclass
class Entry:
    priority: int
    counter: int
    ready_at: float | None


@dataclass
class PriorityModel:
    """The reference: controller-runtime's priority queue written as plainly as possible."""

    now: float = 1000.0
    entries: dict[str, Entry] = field(default_factory=dict)
    locked: set[str] = field(default_factory=set)
    counter: int = 0
    shutting_down: bool = False
    holding: dict[int, str] = field(default_factory=dict)
    exited: set[int] = field(default_factory=set)
    paused: set[int] = field(default_factory=set)
    limiter: ItemExponentialFailureRateLimiter = field(default_factory=limiter)

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    def add(self, key: str, after: float, rate_limited: bool, priority: int | None) -> None:
        if self.shutting_down:
            return
        delay = after
        if rate_limited:
            limited = self.limiter.when(key)
            delay = limited if after == 0 else min(after, limited)
        ready_at = self.now + delay if delay > 0 else None
        prio = priority or 0
        old = self.entries.get(key)
        if old is None:
            self.entries[key] = Entry(prio, self.fresh(), ready_at)
            return
        if prio > old.priority:
            old.priority, old.counter = prio, self.fresh()
        if old.ready_at is not None and ready_at is None:
            old.ready_at, old.counter = None, self.fresh()
        elif old.ready_at is not None and ready_at is not None:
            old.ready_at = min(old.ready_at, ready_at)

    def available(self) -> list[tuple[int, int, str]]:
        return sorted(
            (-e.priority, e.counter, k)
            for k, e in self.entries.items()
            if e.ready_at is None and k not in self.locked
        )

    def apply(self, event: Event) -> None:
        kind = event[0]
        if kind == "add":
            _, key, after, rate_limited, priority = event
            self.add(str(key), float(after), bool(rate_limited), priority)  # type: ignore[arg-type]
        elif kind == "forget":
            self.limiter.forget(event[1])
        elif kind == "step":
            self.now = float(event[1])  # type: ignore[arg-type]
            due = sorted(
                (e.ready_at, -e.priority, e.counter, k)
                for k, e in self.entries.items()
                if e.ready_at is not None and e.ready_at <= self.now
            )
            for _, _, _, key in due:
                entry = self.entries[key]
                entry.ready_at, entry.counter = None, self.fresh()
        elif kind == "shutdown":
            self.shutting_down = True
        elif kind == "got":
            _, worker, key, priority = event
            assert not self.shutting_down, "an item was handed out after shutdown"
            assert worker not in self.holding
            assert key not in self.holding.values(), f"{key} handed to two workers"
            available = self.available()
            assert available and available[0][2] == key, f"got {key}, model has {available}"
            assert priority == self.entries[str(key)].priority
            del self.entries[str(key)]
            self.locked.add(str(key))
            self.holding[int(worker)] = str(key)  # type: ignore[call-overload]
        elif kind == "done":
            worker, key = int(event[1]), str(event[2])  # type: ignore[call-overload]
            assert self.holding.pop(worker) == key
            self.locked.remove(key)
        elif kind == "exit":
            assert self.shutting_down
            self.exited.add(int(event[1]))  # type: ignore[call-overload]
        elif kind == "paused":
            self.paused.add(int(event[1]))  # type: ignore[call-overload]
        elif kind == "resumed":
            self.paused.discard(int(event[1]))  # type: ignore[call-overload]
        elif kind == "len":
            ready = [e.priority for e in self.entries.values() if e.ready_at is None]
            assert event[1] == len(ready), f"len {event[1]} != model {len(ready)}"
            depth = {str(p): float(ready.count(p)) for p in set(ready)}
            reported = {p: d for p, d in dict(event[2]).items() if d}  # type: ignore[call-overload]
            assert reported == depth, f"workqueue_depth {reported} != model {depth}"
        elif kind == "quiet" and not self.shutting_down:
            busy = self.holding.keys() | self.exited | self.paused
            idle = [w for w in range(WORKERS) if w not in busy]
            assert not (idle and self.available()), f"{idle} idle while {self.available()} ready"


key_st = st.sampled_from(KEYS)
worker_st = st.integers(0, WORKERS - 1)
add_st = st.tuples(
    st.just("add"),
    key_st,
    st.sampled_from([0.0, 0.0, -1.0, 0.5, 1.0, 3.0]),
    st.booleans(),
    st.sampled_from([None, None, -100, 0, 1, 2]),
)
op_st = st.one_of(
    add_st,
    add_st,
    st.tuples(st.just("forget"), key_st),
    st.tuples(st.just("release"), worker_st),
    st.tuples(st.just("release"), worker_st),
    st.tuples(st.just("step"), st.sampled_from([0.5, 1.0, 2.0])),
    st.tuples(st.just("cancel"), worker_st),
    st.tuples(st.just("resume"), worker_st),
    st.tuples(st.just("yield"), st.integers(1, 3)),
)


class Harness(ScheduleHarness):
    """The priority queue, with its metrics, under the shared schedule driver."""

    def __init__(self) -> None:
        super().__init__(FakeClock())
        self.metrics = OperatorMetrics()
        self.queue: PriorityQueue[str] = PriorityQueue(
            clock=self.clock,
            rate_limiter=limiter(),
            metrics=self.metrics.queue_metrics("prop", self.clock),
        )

    async def take(self, w: int) -> tuple[str, Event] | None:
        key, priority, shutdown = await self.queue.get_with_priority()
        return None if shutdown else (key, ("got", w, key, priority))

    def finish(self, key: str) -> None:
        self.queue.done(key)

    def queue_op(self, op: Event) -> bool:
        q, kind = self.queue, op[0]
        if kind not in ("add", "forget", "shutdown"):
            return False
        self.log.append(op)
        if kind == "add":
            _, key, after, rate_limited, priority = op
            q.add(str(key), after=float(after), rate_limited=bool(rate_limited), priority=priority)  # type: ignore[arg-type]
        elif kind == "forget":
            q.forget(str(op[1]))
        else:
            q.shut_down()
        return True

    def len_event(self) -> Event:
        return ("len", len(self.queue), self.depth())

    def shut_down(self) -> None:
        self.queue.shut_down()

    def depth(self) -> tuple[tuple[str, float], ...]:
        """The workqueue_depth gauge per priority label, as a scraper would read it."""
        return tuple(
            (sample.labels["priority"], sample.value)
            for family in self.metrics.workqueue_depth.collect()
            for sample in family.samples
        )


def replay(log: list[Event]) -> PriorityModel:
    model = PriorityModel()
    for event in log:
        if event == ("drained",) and not model.shutting_down:
            assert not model.entries and not model.holding, "an added item was never handed out"
        model.apply(event)
    return model


@settings(max_examples=200, deadline=None)
@given(st.lists(op_st, min_size=15, max_size=80), st.one_of(st.none(), st.integers(5, 80)))
def test_priority_queue_matches_the_model(
    ops: list[tuple[object, ...]], shutdown_at: int | None
) -> None:
    harness = Harness()
    asyncio.run(harness.run(ops, shutdown_at=shutdown_at))
    model = replay(harness.log)
    assert model.exited == set(range(WORKERS))
    assert not model.locked
