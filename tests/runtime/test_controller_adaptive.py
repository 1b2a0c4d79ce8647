"""Adaptive concurrency in the controller: the limit moves, the queue's guarantees do not.

Properties (hypothesis, FakeClock): whatever the schedule of adds, outcomes and limit changes,
one key is never reconciled twice at once, a reconcile never starts while as many as the current
limit are running, no add is lost, and raising the limit lets that many run. Then the whole loop
(metrics -> law -> gate) on a FakeClock: a backlog with flat latency grows the limit, the
``controller_runtime_max_concurrent_reconciles`` gauge follows and every change is logged.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.concurrency.law import LawSettings
from rayop.runtime.controller import Controller, Request, Result
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import settle
from rayop.testing.clock import FakeClock
from rayop.testing.sources import InMemorySource

KEYS = [Request("ns", f"k{i}") for i in range(10)]
CEILING = 5

action = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(KEYS)),
    st.tuples(st.just("limit"), st.integers(min_value=1, max_value=CEILING)),
    st.tuples(st.just("yield"), st.integers(min_value=1, max_value=8)),
)


@dataclass
class Observed:
    """What the reconciler saw; violations are recorded, not raised."""

    in_flight: set[Request] = field(default_factory=set)
    overlaps: list[Request] = field(default_factory=list)
    over_limit: list[tuple[int, int]] = field(default_factory=list)
    seq: int = 0
    last_add: dict[Request, int] = field(default_factory=dict)
    last_start: dict[Request, int] = field(default_factory=dict)
    burst_parallel: int = 0


async def scenario(
    priority_queue: bool, yields: list[int], actions: list[tuple[str, object]], final: int
) -> tuple[Observed, Controller]:
    seen = Observed()
    clock = FakeClock()
    calls = 0

    async def reconcile(request: Request) -> Result:
        nonlocal calls
        if request in seen.in_flight:
            seen.overlaps.append(request)
        seen.in_flight.add(request)
        if len(seen.in_flight) > controller.max_concurrent_reconciles:
            seen.over_limit.append((len(seen.in_flight), controller.max_concurrent_reconciles))
        seen.burst_parallel = max(seen.burst_parallel, len(seen.in_flight))
        seen.seq += 1
        seen.last_start[request] = seen.seq
        calls += 1
        try:
            await settle(yields[calls % len(yields)])
        finally:
            seen.in_flight.discard(request)
        return Result()

    source = InMemorySource()
    controller = Controller(
        "adaptive", reconcile, sources=[source], use_priority_queue=priority_queue,
        clock=clock, metrics=OperatorMetrics(),
    )  # fmt: skip
    controller.adapt_concurrency(LawSettings(floor=1, ceiling=CEILING), interval=1e9)

    def add(request: Request) -> None:
        seen.seq += 1
        seen.last_add[request] = seen.seq
        source.add(request)

    await controller.start()
    for kind, arg in actions:
        if kind == "add":
            assert isinstance(arg, Request)
            add(arg)
        elif kind == "limit":
            assert isinstance(arg, int)
            controller._set_limit(arg)
        else:
            assert isinstance(arg, int)
            await settle(arg)
    await settle(200)
    # Liveness of a raise: after the final limit, a burst of distinct slow keys runs that wide.
    controller._set_limit(final)
    await settle(20)
    seen.burst_parallel = 0
    for request in KEYS:
        add(request)
    await settle(400)
    await controller.stop()
    return seen, controller


@settings(max_examples=120, deadline=None)
@given(
    priority_queue=st.booleans(),
    yields=st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=6),
    actions=st.lists(action, max_size=50),
    final=st.integers(min_value=1, max_value=CEILING),
)
def test_limit_changes_keep_per_key_locking_and_lose_no_add(
    priority_queue: bool, yields: list[int], actions: list[tuple[str, object]], final: int
) -> None:
    seen, controller = asyncio.run(scenario(priority_queue, yields, actions, final))
    assert seen.overlaps == []
    assert seen.over_limit == []
    for request, added in seen.last_add.items():
        assert seen.last_start.get(request, 0) > added, f"{request} lost an add"
    if max(yields) >= 3:  # reconciles long enough to overlap
        assert seen.burst_parallel == final
    assert controller.max_concurrent_reconciles == final


def test_the_limit_cannot_be_made_adaptive_once_running() -> None:
    async def main() -> None:
        controller = Controller("c", lambda _r: _ok(), metrics=OperatorMetrics())
        await controller.start()
        with pytest.raises(RuntimeError, match="is running"):
            controller.adapt_concurrency(LawSettings())
        await controller.stop()

    asyncio.run(main())


async def _ok() -> Result:
    return Result()


def test_a_backlog_with_flat_latency_grows_the_limit_and_the_gauge_follows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="rayop.runtime.concurrency")
    clock = FakeClock()
    metrics = OperatorMetrics()

    async def reconcile(request: Request) -> Result:
        await clock.sleep(0.5)
        return Result()

    async def main() -> list[int]:
        source = InMemorySource()
        controller = Controller("grow", reconcile, sources=[source], clock=clock, metrics=metrics)
        controller.adapt_concurrency(LawSettings(floor=1, ceiling=4), interval=2.0)
        for i in range(400):
            source.add(Request("ns", f"c{i}"))
        await controller.start()
        limits = []
        for _ in range(120):  # 60 virtual seconds in 0.5 s steps
            clock.step(0.5)
            await settle(10)
            limits.append(controller.max_concurrent_reconciles)
        await controller.stop(graceful=False)
        return limits

    limits = asyncio.run(main())
    assert limits[0] == 1
    assert limits[-1] == 4
    assert limits == sorted(limits)
    gauge = metrics.registry.get_sample_value(
        "controller_runtime_max_concurrent_reconciles", {"controller": "grow"}
    )
    assert gauge == 4
    changes = [  # the law's changes, not the controller's start line (whatever its logger's level)
        r.getMessage()
        for r in caplog.records
        if r.name == "rayop.runtime.concurrency" and "reconcile concurrency" in r.getMessage()
    ]
    assert changes[0].startswith("controller grow: reconcile concurrency 1 -> 2: workers all busy")
    assert len(changes) == 2  # slow start: 1 -> 2 -> 4


def test_api_latency_rising_mid_run_shrinks_the_limit_within_30_virtual_seconds() -> None:
    """A tenfold slowdown sheds workers at once; one that fewer workers do not relieve is rebased."""
    clock = FakeClock()
    metrics = OperatorMetrics()
    rest = RestClientMetrics(metrics.registry)
    latency = 0.02

    async def reconcile(request: Request) -> Result:
        for _ in range(5):  # five API calls of ``latency`` each, as the REST client records them
            await clock.sleep(latency)
            rest.observe_request("GET", "api", latency)
        return Result()

    async def main() -> tuple[list[int], list[int]]:
        nonlocal latency
        source = InMemorySource()
        controller = Controller("slow", reconcile, sources=[source], clock=clock, metrics=metrics)
        controller.adapt_concurrency(LawSettings(floor=1, ceiling=8), rest=rest, interval=2.0)
        for i in range(5000):
            source.add(Request("ns", f"c{i}"))
        await controller.start()

        async def run_for(seconds: float) -> list[int]:
            limits = []
            for _ in range(round(seconds / 0.02)):
                clock.step(0.02)
                await settle(3)
                limits.append(controller.max_concurrent_reconciles)
            return limits

        before = await run_for(40.0)
        latency = 0.2  # the API server slows down tenfold
        after = await run_for(30.0)
        await controller.stop(graceful=False)
        return before, after

    before, after = asyncio.run(main())
    assert before[-1] == 8
    first_cut = next(i for i, limit in enumerate(after) if limit < 8)
    assert first_cut * 0.02 < 30
    # The latency is the API server's own (as many workers or fewer, each call takes 0.2 s): the
    # cut does not bring it down, so the law takes it as its new base and grows back.
    assert after[-1] == 8


def test_slow_start_doubles_as_fast_as_the_reconciles_come_back() -> None:
    """A backlog of 150 ms reconciles meets 16 workers about a second after it appears, not 4 s."""
    clock = FakeClock()
    metrics = OperatorMetrics()
    rest = RestClientMetrics(metrics.registry)

    async def reconcile(request: Request) -> Result:
        for _ in range(5):
            await clock.sleep(0.03)
            rest.observe_request("GET", "api", 0.03)
        return Result()

    async def main() -> list[tuple[float, int]]:
        source = InMemorySource()
        controller = Controller("ramp", reconcile, sources=[source], clock=clock, metrics=metrics)
        auto = controller.adapt_concurrency(LawSettings(floor=1, ceiling=16), rest=rest)
        for i in range(2000):
            source.add(Request("ns", f"c{i}"))
        await controller.start()
        for _ in range(round(3.0 / 0.01)):
            clock.step(0.01)
            await settle(3)
        await controller.stop(graceful=False)
        start = clock.now() - 3.0
        return [(t - start, d.limit) for t, d in auto.decisions]

    changes = asyncio.run(main())
    assert [limit for _, limit in changes] == [2, 4, 8, 16]
    times = [t for t, _ in changes]
    assert all(b - a >= 0.25 - 1e-6 for a, b in zip([0.0, *times], times, strict=False))
    assert changes[-1][0] <= 1.5  # the 1 s windows alone would take 4 s
