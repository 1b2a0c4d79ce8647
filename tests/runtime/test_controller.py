"""The controller loop: result handling (C4), panics (C5), timeouts (C6), start-up and shutdown."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rayop.runtime.controller import (
    CacheSyncTimeoutError,
    Controller,
    ReconcilePanic,
    Request,
    Result,
    TerminalError,
    current_reconcile_id,
)
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import settle
from rayop.testing.clock import FakeClock
from rayop.testing.sources import InMemorySource

A = Request("ns", "a")
B = Request("ns", "b")
C = Request("ns", "c")


class Script:
    """A reconciler whose outcomes are scripted; records each call."""

    def __init__(self, *outcomes: Result | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[Request] = []
        self.ids: list[str | None] = []

    async def __call__(self, request: Request) -> Result:
        self.calls.append(request)
        self.ids.append(current_reconcile_id.get())
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def value(metrics: OperatorMetrics, sample: str) -> float:
    for line in metrics.render().decode().splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{sample} not exposed")


def total(metrics: OperatorMetrics, result: str, name: str = "c") -> float:
    return value(
        metrics, f'controller_runtime_reconcile_total{{controller="{name}",result="{result}"}}'
    )


def counter(metrics: OperatorMetrics, what: str, name: str = "c") -> float:
    return value(metrics, f'controller_runtime_{what}_total{{controller="{name}"}}')


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def metrics() -> OperatorMetrics:
    return OperatorMetrics()


@pytest.fixture(params=[True, False], ids=["priority", "classic"])
def use_priority_queue(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
async def make(
    clock: FakeClock, metrics: OperatorMetrics, use_priority_queue: bool
) -> AsyncIterator[Callable[..., Controller]]:
    started: list[Controller] = []

    def build(reconcile: Any, *requests: Request, **options: Any) -> Controller:
        options.setdefault("use_priority_queue", use_priority_queue)
        controller = Controller(
            "c",
            reconcile,
            sources=[InMemorySource(requests)],
            clock=clock,
            metrics=metrics,
            **options,
        )
        started.append(controller)
        return controller

    yield build
    for controller in started:
        await controller.stop()


async def test_success_forgets_and_counts(
    make: Callable[..., Controller], metrics: OperatorMetrics
) -> None:
    script = Script(Result(requeue=True), Result())
    controller = make(script, A)
    await controller.start()
    await settle()
    assert controller.queue.num_requeues(A) == 1
    controller.enqueue(A)
    await settle()
    assert script.calls == [A, A]
    assert controller.queue.num_requeues(A) == 0
    assert total(metrics, "success") == 1
    assert total(metrics, "requeue") == 1
    assert value(metrics, 'controller_runtime_reconcile_time_seconds_count{controller="c"}') == 2


async def test_error_requeues_rate_limited(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    script = Script(RuntimeError("boom"), RuntimeError("boom"), Result())
    controller = make(script, A)
    await controller.start()
    await settle()
    assert script.calls == [A]
    assert controller.queue.num_requeues(A) == 1
    clock.step(0.004)
    await settle()
    assert len(script.calls) == 1  # first retry waits 5 ms
    clock.step(0.001)
    await settle()
    assert len(script.calls) == 2
    clock.step(0.009)
    await settle()
    assert len(script.calls) == 2  # second retry waits 10 ms
    clock.step(0.001)
    await settle()
    assert len(script.calls) == 3
    assert controller.queue.num_requeues(A) == 0
    assert counter(metrics, "reconcile_errors") == 2
    assert total(metrics, "error") == 2
    assert total(metrics, "success") == 1
    assert counter(metrics, "terminal_reconcile_errors") == 0


async def test_terminal_error_is_not_requeued_nor_forgotten(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = TerminalError("bad spec")
    script = Script(Result(requeue=True), TerminalError("bad spec"), wrapped)
    controller = make(script, A)
    await controller.start()
    await settle()
    clock.step(0.005)
    await settle()
    assert len(script.calls) == 2
    clock.step(10_000)
    await settle()
    assert len(script.calls) == 2
    assert controller.queue.num_requeues(A) == 1  # history kept
    controller.enqueue(A)
    await settle()
    clock.step(10_000)
    await settle()
    assert len(script.calls) == 3  # an error raised from a TerminalError is terminal too
    assert counter(metrics, "terminal_reconcile_errors") == 2
    assert counter(metrics, "reconcile_errors") == 2
    assert total(metrics, "error") == 2


async def test_requeue_after_forgets_then_delays(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    script = Script(Result(requeue=True), Result(requeue=True, requeue_after=10.0), Result())
    controller = make(script, A)
    await controller.start()
    await settle()
    clock.step(0.005)
    await settle()
    assert len(script.calls) == 2
    assert controller.queue.num_requeues(A) == 0
    clock.step(9.9)
    await settle()
    assert len(script.calls) == 2
    clock.step(0.1)
    await settle()
    assert len(script.calls) == 3
    assert total(metrics, "requeue_after") == 1
    assert total(metrics, "requeue") == 1


async def test_requeue_keeps_backoff_growing(
    make: Callable[..., Controller], clock: FakeClock
) -> None:
    script = Script(Result(requeue=True), Result(requeue=True), Result())
    controller = make(script, A)
    await controller.start()
    await settle()
    clock.step(0.005)
    await settle()
    assert controller.queue.num_requeues(A) == 2
    clock.step(0.0099)
    await settle()
    assert len(script.calls) == 2
    clock.step(0.0001)
    await settle()
    assert len(script.calls) == 3


class ErrorWithResult(Exception):
    def __init__(self, result: Result) -> None:
        super().__init__("failed")
        self.result = result


async def test_error_ignores_carried_requeue_after_with_warning(
    make: Callable[..., Controller], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    script = Script(ErrorWithResult(Result(requeue_after=60.0)))
    controller = make(script, A)
    with caplog.at_level(logging.WARNING, logger="rayop.runtime.controller"):
        await controller.start()
        await settle()
    assert any(
        "RequeueAfter and Requeue will always be ignored" in r.message for r in caplog.records
    )
    assert any("Reconciler error" in r.message for r in caplog.records)
    clock.step(0.005)
    await settle()
    assert len(script.calls) == 2  # rate-limited retry, not 60 s


async def test_priority_is_kept_or_overridden_on_requeue(
    clock: FakeClock, metrics: OperatorMetrics
) -> None:
    gate = asyncio.Event()
    outcomes: list[Result | Exception] = [
        RuntimeError("boom"),
        Result(requeue_after=1.0, priority=7),
    ]

    async def reconcile(request: Request) -> Result:
        if request == B:  # a blocker that keeps the only worker busy while A waits in the queue
            await gate.wait()
            return Result()
        outcome = outcomes.pop(0) if outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def depth(priority: str) -> float:
        return value(metrics, f'workqueue_depth{{controller="c",name="c",priority="{priority}"}}')

    source = InMemorySource()
    controller = Controller("c", reconcile, sources=[source], clock=clock, metrics=metrics)
    source.add(A, priority=-100)  # as from the initial list
    await controller.start()
    await settle()  # A fails: rate-limited retry in 5 ms
    source.add(B)
    await settle()
    clock.step(0.005)
    await settle()
    assert depth("-100") == 1  # the retry kept A's low priority
    gate.set()
    await settle()  # B done; A returns requeue_after=1 s with priority 7
    gate.clear()
    source.add(B)
    await settle()
    clock.step(1.0)
    await settle()
    assert (depth("-100"), depth("7")) == (0, 1)  # Result.priority overrode it
    gate.set()
    await controller.stop()


async def test_timeout_cancels_counts_and_requeues(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    cancelled = asyncio.Event()
    calls = 0

    async def hang(request: Request) -> Result:
        nonlocal calls
        calls += 1
        if calls == 1:
            try:
                await asyncio.Event().wait()
            finally:
                cancelled.set()
        return Result()

    controller = make(hang, A, reconciliation_timeout=5.0)
    await controller.start()
    await settle()
    clock.step(4.9)
    await settle()
    assert not cancelled.is_set()
    clock.step(0.1)
    await cancelled.wait()
    await settle()
    assert counter(metrics, "reconcile_timeouts") == 1
    assert counter(metrics, "reconcile_errors") == 1
    assert controller.queue.num_requeues(A) == 1
    clock.step(0.005)
    await settle()
    assert calls == 2
    assert total(metrics, "success") == 1


async def test_timeout_error_raised_by_reconciler_is_not_a_timeout(
    make: Callable[..., Controller], metrics: OperatorMetrics
) -> None:
    controller = make(Script(TimeoutError("upstream")), A, reconciliation_timeout=5.0)
    await controller.start()
    await settle()
    assert counter(metrics, "reconcile_errors") == 1
    assert counter(metrics, "reconcile_timeouts") == 0


async def test_panic_is_recovered_as_error(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    script = Script(asyncio.CancelledError(), Result())  # a stray cancellation, not a stop
    controller = make(script, A)
    await controller.start()
    await settle()
    assert counter(metrics, "reconcile_panics") == 1
    assert counter(metrics, "reconcile_errors") == 1
    clock.step(0.005)
    await settle()
    assert len(script.calls) == 2
    assert total(metrics, "success") == 1


async def test_plain_exception_is_not_a_panic(
    make: Callable[..., Controller], metrics: OperatorMetrics
) -> None:
    controller = make(Script(KeyError("x")), A)
    await controller.start()
    await settle()
    assert counter(metrics, "reconcile_errors") == 1
    assert counter(metrics, "reconcile_panics") == 0


async def test_unrecovered_panic_crashes_controller(
    clock: FakeClock, metrics: OperatorMetrics
) -> None:
    script = Script(asyncio.CancelledError())
    controller = Controller(
        "c", script, sources=[InMemorySource([A, B])], clock=clock, metrics=metrics,
        recover_panic=False, max_concurrent_reconciles=1,
    )  # fmt: skip
    await controller.start()
    with pytest.raises(ExceptionGroup) as info:
        await controller.wait()
    assert info.group_contains(ReconcilePanic)
    assert counter(metrics, "reconcile_panics") == 1
    assert controller.queue.shutting_down()
    assert script.calls == [A]
    with pytest.raises(ExceptionGroup):
        await controller.stop()


async def test_reconcile_id_is_fresh_per_call(make: Callable[..., Controller]) -> None:
    script = Script()
    controller = make(script, A, B)
    await controller.start()
    await settle()
    assert len(script.ids) == 2
    assert all(i is not None and len(i) == 36 for i in script.ids)
    assert script.ids[0] != script.ids[1]
    assert current_reconcile_id.get() is None


async def test_exactly_n_workers(make: Callable[..., Controller], metrics: OperatorMetrics) -> None:
    release = asyncio.Event()
    running: list[Request] = []

    async def block(request: Request) -> Result:
        running.append(request)
        await release.wait()
        return Result()

    requests = [Request("ns", f"r{i}") for i in range(7)]
    controller = make(block, *requests, max_concurrent_reconciles=3)
    await controller.start()
    await settle()
    assert len(running) == 3
    assert value(metrics, 'controller_runtime_active_workers{controller="c"}') == 3
    assert value(metrics, 'controller_runtime_max_concurrent_reconciles{controller="c"}') == 3
    release.set()
    await settle()
    assert sorted(r.name for r in running) == sorted(r.name for r in requests)
    assert value(metrics, 'controller_runtime_active_workers{controller="c"}') == 0


async def test_workers_wait_for_sources_to_sync(
    clock: FakeClock, metrics: OperatorMetrics, caplog: pytest.LogCaptureFixture
) -> None:
    script = Script()
    synced, late = InMemorySource([A]), InMemorySource([B], synced=False)
    controller = Controller("c", script, sources=[synced, late], clock=clock, metrics=metrics)
    caplog.set_level(logging.INFO, logger="rayop.runtime.controller")
    starting = asyncio.create_task(controller.start())
    await settle()
    assert synced.started and late.started
    clock.step(5.0)
    await settle()
    assert not starting.done()
    assert script.calls == []
    assert len(controller.queue) == 2  # events are queued while waiting
    assert [r.message for r in caplog.records] == ["Starting Controller"]
    late.set_synced()
    clock.step(0.1)
    await starting
    # controller-runtime's line, logged once the caches synced (the side-by-side waits for it)
    started = [r for r in caplog.records if r.message == "Starting workers"]
    assert [(r.__dict__["controller"], r.__dict__["worker count"]) for r in started] == [("c", 1)]
    await settle()
    assert sorted(r.name for r in script.calls) == ["a", "b"]
    await controller.stop()


async def test_cache_sync_timeout_fails_start(clock: FakeClock, metrics: OperatorMetrics) -> None:
    controller = Controller(
        "c", Script(), sources=[InMemorySource(synced=False)], clock=clock, metrics=metrics,
        cache_sync_timeout=2.0,
    )  # fmt: skip
    starting = asyncio.create_task(controller.start())
    for _ in range(19):
        clock.step(0.1)
        await settle(3)
    assert not starting.done()
    clock.step(0.2)
    await settle(3)
    assert starting.done()
    with pytest.raises(CacheSyncTimeoutError, match="timed out waiting for cache to be synced"):
        await starting
    assert controller.queue.shutting_down()


async def test_second_start_fails(make: Callable[..., Controller]) -> None:
    controller = make(Script())
    await controller.start()
    with pytest.raises(RuntimeError):
        await controller.start()


async def test_stop_drains_classic_queue_but_not_priority_queue(
    make: Callable[..., Controller], use_priority_queue: bool
) -> None:
    release = asyncio.Event()
    seen: list[str] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request.name)
        await release.wait()
        return Result()

    controller = make(reconcile, A, B, C)
    await controller.start()
    await settle()
    stopping = asyncio.create_task(controller.stop())
    await settle()
    assert not stopping.done()  # the running reconcile is never abandoned
    release.set()
    await stopping
    assert seen == (["a"] if use_priority_queue else ["a", "b", "c"])


async def test_stop_while_waiting_for_sync(clock: FakeClock, metrics: OperatorMetrics) -> None:
    script = Script()
    controller = Controller(
        "c", script, sources=[InMemorySource([A], synced=False)], clock=clock, metrics=metrics
    )
    starting = asyncio.create_task(controller.start())
    await settle()
    await controller.stop()
    clock.step(0.1)
    await starting
    assert script.calls == []


async def _started_until(release: asyncio.Event, make: Callable[..., Controller]) -> Controller:
    """A started controller whose passes (of A, queued) wait for ``release``."""

    async def reconcile(request: Request) -> Result:
        await release.wait()
        return Result()

    controller = make(reconcile, A)
    await controller.start()
    await settle()
    return controller


async def test_metrics_in_exposition(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    release = asyncio.Event()
    await _started_until(release, make)
    clock.step(0.5)
    await settle()
    text = metrics.render().decode()
    assert 'controller_runtime_active_workers{controller="c"} 1.0' in text
    assert 'workqueue_unfinished_work_seconds{controller="c",name="c"} 0.5' in text
    assert 'workqueue_longest_running_processor_seconds{controller="c",name="c"} 0.5' in text
    assert 'workqueue_adds_total{controller="c",name="c"} 1.0' in text
    release.set()
    await settle()
    text = metrics.render().decode()
    assert 'controller_runtime_reconcile_total{controller="c",result="success"} 1.0' in text
    assert 'workqueue_work_duration_seconds_count{controller="c",name="c"} 1.0' in text
    assert 'controller_runtime_reconcile_time_seconds_sum{controller="c"} 0.5' in text


async def test_the_unfinished_work_ticker_sleeps_while_no_pass_runs(
    make: Callable[..., Controller], metrics: OperatorMetrics, clock: FakeClock
) -> None:
    """controller-runtime updates the gauges every 500 ms; with no pass running they read 0, so
    an idle controller sets them once and waits for a pass instead of waking twice a second."""
    release = asyncio.Event()
    controller = await _started_until(release, make)
    release.set()
    await settle()
    clock.step(0.5)
    await settle()
    text = metrics.render().decode()
    assert 'workqueue_unfinished_work_seconds{controller="c",name="c"} 0.0' in text
    assert not clock.has_sleepers(), "idle: nothing waits on the clock"
    release.clear()
    controller.enqueue(Request("ns", "b"))
    await settle()
    assert clock.has_sleepers()
    clock.step(0.5)
    await settle()
    text = metrics.render().decode()
    assert 'workqueue_unfinished_work_seconds{controller="c",name="c"} 0.5' in text
    release.set()
    await settle()
    await controller.stop()


async def test_abort_cancels_running_reconciles_and_hands_out_nothing_more(
    make: Callable[..., Controller],
) -> None:
    cancelled: list[str] = []
    seen: list[str] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request.name)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(request.name)
            raise
        return Result()

    controller = make(reconcile, A, B, C)
    await controller.start()
    await settle()
    controller.abort()
    await asyncio.wait_for(controller.wait(), 1)
    assert seen == cancelled == ["a"]  # for either queue: no drain of b and c


async def test_workers_yield_to_the_loop_between_reconciles_that_never_suspend(
    make: Callable[..., Controller],
) -> None:
    """A converged RayCluster pass reads only caches and never awaits anything that suspends,
    and a worker takes a queued item without suspending either. Without a yield between items,
    one worker ran a whole queue of such passes without letting anything else run: at 10,000
    RayClusters the ~9,700 passes queued at convergence held the loop for 21 s, and a /metrics
    scrape (the probes and the lease renewal alike) waited all that time. Each turn of the loop
    must see at most one reconcile per worker."""
    done: list[str] = []

    async def instant(request: Request) -> Result:
        done.append(request.name)
        return Result()

    requests = [Request("ns", f"r{i}") for i in range(200)]
    controller = make(instant, *requests, max_concurrent_reconciles=2)
    seen: list[int] = []

    async def heartbeat() -> None:
        while len(done) < len(requests) and len(seen) < 10 * len(requests):
            seen.append(len(done))
            await asyncio.sleep(0)
        seen.append(len(done))

    beating = asyncio.create_task(heartbeat())
    await controller.start()
    await beating
    assert done and len(done) == len(requests)
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert max(gaps) <= 2, f"{max(gaps)} reconciles ran in one turn of the loop"
