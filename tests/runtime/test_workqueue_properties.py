"""Hypothesis-generated schedules against the classic rate-limiting queue, checked by a model.

A driver task performs a generated schedule of add / add_after / add_rate_limited / forget /
release (the worker holding an item calls done) / clock steps / cancelling a blocked worker /
shut_down, while two worker tasks loop on get and wait for their release. Every call and every
item a worker receives is appended to one log in the order it happened (the loop is
single-threaded), and the log is replayed through a plain reference model of §1.1-1.3: each get
must return the model's FIFO head (so never two holders of one key, and adds during processing
collapse into exactly one more processing), ``len`` must match, no worker may sit idle while an
item is queued, and after the schedule everything added before shutdown is handed out.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.runtime.queues.rate_limiters import ItemExponentialFailureRateLimiter
from rayop.runtime.queues.ratelimiting import RateLimitingQueue
from rayop.testing.clock import FakeClock

from .queue_schedule import WORKERS, Event, ScheduleHarness

KEYS = ["a", "b", "c"]


def limiter() -> ItemExponentialFailureRateLimiter:
    return ItemExponentialFailureRateLimiter(0.5, 4.0)


@dataclass
class ClassicModel:
    """The reference: client-go's queue written as plainly as possible."""

    now: float = 1000.0
    queue: deque[str] = field(default_factory=deque)
    dirty: set[str] = field(default_factory=set)
    processing: set[str] = field(default_factory=set)
    delayed: dict[str, tuple[float, int]] = field(default_factory=dict)
    seq: int = 0
    shutting_down: bool = False
    holding: dict[int, str] = field(default_factory=dict)
    exited: set[int] = field(default_factory=set)
    paused: set[int] = field(default_factory=set)
    limiter: ItemExponentialFailureRateLimiter = field(default_factory=limiter)

    def add(self, key: str) -> None:
        if self.shutting_down or key in self.dirty:
            return
        self.dirty.add(key)
        if key not in self.processing:
            self.queue.append(key)

    def add_after(self, key: str, delay: float) -> None:
        if self.shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        ready_at = self.now + delay
        if key not in self.delayed or ready_at < self.delayed[key][0]:
            self.seq += 1
            self.delayed[key] = (ready_at, self.seq)

    def apply(self, event: Event) -> None:
        kind = event[0]
        if kind == "add":
            self.add(str(event[1]))
        elif kind == "add_after":
            self.add_after(str(event[1]), float(event[2]))  # type: ignore[arg-type]
        elif kind == "rate_limited":
            self.add_after(str(event[1]), self.limiter.when(event[1]))
        elif kind == "forget":
            self.limiter.forget(event[1])
        elif kind == "step":
            self.now = float(event[1])  # type: ignore[arg-type]
            due = sorted((t, s, k) for k, (t, s) in self.delayed.items() if t <= self.now)
            for _, _, key in due:
                del self.delayed[key]
                self.add(key)
        elif kind == "shutdown":
            self.shutting_down = True
            self.delayed.clear()
        elif kind == "got":
            worker, key = int(event[1]), str(event[2])  # type: ignore[call-overload]
            assert worker not in self.holding
            assert key not in self.holding.values(), f"{key} handed to two workers"
            assert self.queue and self.queue[0] == key, f"got {key}, model queue {self.queue}"
            self.queue.popleft()
            self.dirty.discard(key)
            self.processing.add(key)
            self.holding[worker] = key
        elif kind == "done":
            worker, key = int(event[1]), str(event[2])  # type: ignore[call-overload]
            assert self.holding.pop(worker) == key
            self.processing.remove(key)
            if key in self.dirty:
                self.queue.append(key)
        elif kind == "exit":
            assert self.shutting_down and not self.queue
            self.exited.add(int(event[1]))  # type: ignore[call-overload]
        elif kind == "paused":
            self.paused.add(int(event[1]))  # type: ignore[call-overload]
        elif kind == "resumed":
            self.paused.discard(int(event[1]))  # type: ignore[call-overload]
        elif kind == "len":
            assert event[1] == len(self.queue), f"len {event[1]} != model {len(self.queue)}"
        elif kind == "quiet":
            busy = self.holding.keys() | self.exited | self.paused
            idle = [w for w in range(WORKERS) if w not in busy]
            assert not (idle and self.queue), f"workers {idle} idle while {self.queue} queued"


key_st = st.sampled_from(KEYS)
worker_st = st.integers(0, WORKERS - 1)
op_st = st.one_of(
    st.tuples(st.just("add"), key_st),
    st.tuples(st.just("add_after"), key_st, st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0])),
    st.tuples(st.just("rate_limited"), key_st),
    st.tuples(st.just("forget"), key_st),
    st.tuples(st.just("release"), worker_st),
    st.tuples(st.just("release"), worker_st),
    st.tuples(st.just("step"), st.sampled_from([0.5, 1.0, 2.0])),
    st.tuples(st.just("cancel"), worker_st),
    st.tuples(st.just("resume"), worker_st),
    st.tuples(st.just("yield"), st.integers(1, 3)),
    st.tuples(st.just("shutdown")),
)


class Harness(ScheduleHarness):
    """The classic rate-limiting queue under the shared schedule driver."""

    def __init__(self) -> None:
        super().__init__(FakeClock())
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            clock=self.clock, rate_limiter=limiter()
        )

    async def take(self, w: int) -> tuple[str, Event] | None:
        key, shutdown = await self.queue.get()
        return None if shutdown else (key, ("got", w, key))

    def finish(self, key: str) -> None:
        self.queue.done(key)

    def queue_op(self, op: Event) -> bool:
        q, kind = self.queue, op[0]
        if kind not in ("add", "add_after", "rate_limited", "forget", "shutdown"):
            return False
        self.log.append(op)
        if kind == "add":
            q.add(str(op[1]))
        elif kind == "add_after":
            q.add_after(str(op[1]), float(op[2]))  # type: ignore[arg-type]
        elif kind == "rate_limited":
            q.add_rate_limited(str(op[1]))
        elif kind == "forget":
            q.forget(str(op[1]))
        else:
            q.shut_down()
        return True

    def len_event(self) -> Event:
        return ("len", len(self.queue))

    def shut_down(self) -> None:
        self.queue.shut_down()


def replay(log: list[Event]) -> ClassicModel:
    model = ClassicModel()
    for event in log:
        if event == ("drained",):
            assert not model.queue and not model.holding, "an added item was never handed out"
        model.apply(event)
    return model


@settings(max_examples=200, deadline=None)
@given(st.lists(op_st, min_size=15, max_size=80))
def test_classic_queue_matches_the_model(ops: list[tuple[object, ...]]) -> None:
    harness = Harness()
    asyncio.run(harness.run(ops))
    model = replay(harness.log)
    assert model.exited == set(range(WORKERS))
    assert not model.processing


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "release", "yield"]), st.integers(0, 3)),
        min_size=15,
        max_size=80,
    )
)
def test_busy_schedule_without_delays_matches_the_model(ops: list[tuple[str, int]]) -> None:
    translated: list[tuple[object, ...]] = []
    for kind, n in ops:
        if kind == "add":
            translated.append(("add", KEYS[n % len(KEYS)]))
        elif kind == "release":
            translated.append(("release", n % WORKERS))
        else:
            translated.append(("yield", n + 1))
    harness = Harness()
    asyncio.run(harness.run(translated))
    replay(harness.log)
