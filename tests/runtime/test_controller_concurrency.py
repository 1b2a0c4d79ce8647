"""Property: one key is never reconciled twice at once, distinct keys run up to N in parallel,
and no event is lost, under hypothesis-generated schedules of events, durations and outcomes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.runtime.controller import Controller, Request, Result, TerminalError
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import settle
from rayop.testing.clock import FakeClock
from rayop.testing.sources import InMemorySource

KEYS = [Request("ns", f"k{i}") for i in range(8)]

outcome = st.sampled_from(["ok", "error", "terminal", "requeue", "after"])
behaviour = st.tuples(st.integers(min_value=1, max_value=6), outcome)  # (yields, outcome)
action = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(KEYS), st.sampled_from([None, -100, 0, 5])),
    st.tuples(st.just("yield"), st.integers(min_value=1, max_value=8), st.none()),
    st.tuples(st.just("step"), st.sampled_from([0.001, 0.005, 0.05, 1.0]), st.none()),
)


@dataclass
class Observed:
    """What the reconciler saw; violations are recorded, not raised (raising is the error path)."""

    in_flight: set[Request] = field(default_factory=set)
    max_parallel: int = 0
    overlaps: list[Request] = field(default_factory=list)
    seq: int = 0
    last_add: dict[Request, int] = field(default_factory=dict)
    last_start: dict[Request, int] = field(default_factory=dict)
    calls: int = 0


async def scenario(
    workers: int,
    priority_queue: bool,
    initial: list[Request],
    behaviours: list[tuple[int, str]],
    actions: list[tuple[str, object, object]],
) -> Observed:
    seen = Observed()
    clock = FakeClock()
    settled = False

    async def reconcile(request: Request) -> Result:
        if request in seen.in_flight:
            seen.overlaps.append(request)
        seen.in_flight.add(request)
        seen.max_parallel = max(seen.max_parallel, len(seen.in_flight))
        seen.seq += 1
        seen.last_start[request] = seen.seq
        yields, result = behaviours[seen.calls % len(behaviours)]
        seen.calls += 1
        try:
            await settle(yields)
        finally:
            seen.in_flight.discard(request)
        if settled or result == "ok":
            return Result()
        if result == "error":
            raise RuntimeError("transient")
        if result == "terminal":
            raise TerminalError("permanent")
        if result == "requeue":
            return Result(requeue=True)
        return Result(requeue_after=0.05)

    source = InMemorySource()
    controller = Controller(
        "prop", reconcile, sources=[source], max_concurrent_reconciles=workers,
        use_priority_queue=priority_queue, clock=clock, metrics=OperatorMetrics(),
    )  # fmt: skip

    def add(request: Request, priority: int | None = None) -> None:
        seen.seq += 1
        seen.last_add[request] = seen.seq
        source.add(request, priority)

    for request in initial:
        add(request)
    await controller.start()
    for kind, arg, priority in actions:
        if kind == "add":
            assert isinstance(arg, Request)
            add(arg, priority if isinstance(priority, int) else None)
        elif kind == "yield":
            assert isinstance(arg, int)
            await settle(arg)
        else:
            assert isinstance(arg, float)
            clock.step(arg)
    settled = True  # from now on every reconcile succeeds, so the system quiesces
    idle_rounds = 0
    while idle_rounds < 3:
        before = seen.calls
        clock.step(2000.0)  # past any backoff or requeue_after
        await settle(40)
        idle_rounds = idle_rounds + 1 if seen.calls == before and not seen.in_flight else 0
    await controller.stop()
    return seen


@settings(max_examples=150, deadline=None)
@given(
    workers=st.integers(min_value=1, max_value=4),
    priority_queue=st.booleans(),
    initial=st.lists(st.sampled_from(KEYS), max_size=12),
    behaviours=st.lists(behaviour, min_size=1, max_size=10),
    actions=st.lists(action, max_size=40),
)
def test_same_key_never_concurrent_and_distinct_keys_parallel_up_to_n(
    workers: int,
    priority_queue: bool,
    initial: list[Request],
    behaviours: list[tuple[int, str]],
    actions: list[tuple[str, object, object]],
) -> None:
    seen = asyncio.run(scenario(workers, priority_queue, initial, behaviours, actions))
    assert seen.overlaps == []
    assert seen.max_parallel <= workers
    if len(set(initial)) >= workers:
        assert seen.max_parallel == workers
    for request, added in seen.last_add.items():
        assert seen.last_start.get(request, 0) > added, f"{request} lost an add"
