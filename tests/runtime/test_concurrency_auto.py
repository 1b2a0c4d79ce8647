"""A window of adaptive concurrency is read from the controller's and the REST client's series."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools

import pytest

from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.clock import Clock
from rayop.runtime.concurrency.auto import AdaptiveConcurrency, Totals, window
from rayop.runtime.concurrency.law import Decision, LawSettings, Window
from rayop.runtime.concurrency.worker_gate import WorkerGate
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing.clock import FakeClock


def test_a_window_excludes_the_throttling_wait_from_api_latency() -> None:
    before = Totals(t=0, busy_seconds=0, queue_wait_sum=0, queue_wait_count=0, requests=0,
                    request_seconds=0, throttle_seconds=0, throttle_count=0, reconciles=0,
                    errors=0)  # fmt: skip
    after = Totals(t=2, busy_seconds=1.5, queue_wait_sum=30, queue_wait_count=10, requests=100,
                   request_seconds=7, throttle_seconds=5, throttle_count=100, reconciles=40,
                   errors=4)  # fmt: skip
    w = window(before, after, queue_depth=12)
    assert w.busy_fraction == pytest.approx(0.75)
    assert w.queue_wait_mean == pytest.approx(3.0)
    assert w.api_latency_mean == pytest.approx(0.02)  # (7 s - 5 s throttled) / 100 requests
    assert w.throttle_wait_mean == pytest.approx(0.05)
    assert (w.reconciles, w.errors, w.error_share) == (40, 4, 0.1)
    unthrottled = window(before, dataclasses.replace(after, throttle_count=0), 0)
    assert unthrottled.throttle_wait_mean is None


def test_the_latest_look_of_a_window_is_its_latency_since_the_look_before() -> None:
    zero = Totals(t=0, busy_seconds=0, queue_wait_sum=0, queue_wait_count=0, requests=0,
                  request_seconds=0, throttle_seconds=0, throttle_count=0, reconciles=0,
                  errors=0)  # fmt: skip
    look = dataclasses.replace(zero, t=0.75, requests=30, request_seconds=0.6)
    after = dataclasses.replace(zero, t=1.0, requests=40, request_seconds=1.6)
    w = window(zero, after, queue_depth=5, look=look)
    assert w.api_latency_mean == pytest.approx(0.04)  # 1.6 s over 40 requests
    assert w.latest_latency_mean == pytest.approx(0.1)  # 1.0 s over the last 10
    assert window(zero, after, 5).latest_latency_mean is None  # not looked into
    assert window(zero, after, 5, look=zero).latest_latency_mean is None  # the look is the start


def _adaptive(
    clock: Clock, metrics: OperatorMetrics, rest: RestClientMetrics
) -> AdaptiveConcurrency:
    gate = WorkerGate(1, clock)
    return AdaptiveConcurrency("c", gate, gate.set_limit, lambda: 0.0, metrics, rest,
                               LawSettings(), clock)  # fmt: skip


def test_the_readings_come_from_the_registry_series() -> None:
    clock, metrics = FakeClock(), OperatorMetrics()
    metrics.init_controller("c", 1)
    rest = RestClientMetrics(metrics.registry)
    auto = _adaptive(clock, metrics, rest)
    rest.observe_request("GET", "h", 0.3)
    rest.observe_rate_limiter("GET", "h", 0.1)
    metrics.reconcile_total.labels(controller="c", result="success").inc(3)
    metrics.reconcile_total.labels(controller="c", result="error").inc()
    metrics.reconcile_errors_total.labels(controller="c").inc()
    metrics.workqueue_queue_duration_seconds.labels(name="c", controller="c").observe(2.0)
    clock.step(2)
    t = auto.read()
    assert (t.t, t.requests, t.request_seconds, t.throttle_seconds) == (1002, 1, 0.3, 0.1)
    assert (t.reconciles, t.errors, t.queue_wait_sum, t.queue_wait_count) == (4, 1, 2.0, 1)


def test_windows_are_one_second_in_slow_start_and_two_after_the_first_decrease() -> None:
    clock, metrics = FakeClock(), OperatorMetrics()
    metrics.init_controller("c", 4)
    gate = WorkerGate(4, clock)
    auto = AdaptiveConcurrency("c", gate, gate.set_limit, lambda: 0.0, metrics, None,
                               LawSettings(), clock)  # fmt: skip
    assert auto.interval == 1.0
    throttled = Window(seconds=1, busy_fraction=1.0, queue_depth=5, queue_wait_mean=1.0,
                       api_latency_mean=0.01, throttle_wait_mean=0.3)  # fmt: skip
    assert auto.law.update(throttled).limit == 3
    assert auto.interval == 2.0


async def test_a_rebase_is_logged_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    clock, metrics = FakeClock(), OperatorMetrics()
    metrics.init_controller("c", 8)
    rest = RestClientMetrics(metrics.registry)
    gate = WorkerGate(8, clock)
    auto = AdaptiveConcurrency("c", gate, gate.set_limit, lambda: 3.0, metrics, rest,
                               LawSettings(), clock)  # fmt: skip
    caplog.set_level("INFO", logger="rayop.runtime.concurrency")
    before = auto.read()
    for latency in [0.01] * 3 + [0.2] * 6:  # the API server slows tenfold and stays slow
        for _ in range(10):
            rest.observe_request("GET", "h", latency)
        clock.step(2)
        before = await auto.step(before)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("controller c: reconcile concurrency 8 -> 6: API latency rose to")
    assert lines[1].startswith("controller c: reconcile concurrency 6: API latency stayed at")
    assert lines[1].endswith("the base latency moves from 10 ms to 200 ms and slow start resumes")
    assert gate.limit == 6


def test_the_rest_totals_follow_both_histograms_over_every_label() -> None:
    metrics = OperatorMetrics()
    rest = RestClientMetrics(metrics.registry)
    for verb, host, seconds in [("GET", "a", 0.25), ("PATCH", "b", 0.5), ("GET", "b", 1.0)]:
        rest.observe_request(verb, host, seconds)
        rest.observe_rate_limiter(verb, host, seconds / 10)
    hist = metrics.registry.get_sample_value
    assert (
        rest.totals.requests
        == 3
        == sum(
            hist("rest_client_request_duration_seconds_count", {"verb": v, "host": h}) or 0
            for v, h in [("GET", "a"), ("PATCH", "b"), ("GET", "b")]
        )
    )
    assert rest.totals.request_seconds == pytest.approx(1.75)
    assert rest.totals.throttle_waits == 3
    assert rest.totals.throttle_seconds == pytest.approx(0.175)


async def _let_the_driver_run() -> None:
    """Lets the driver's task take its turns after the fake clock moved."""
    for _ in range(5):
        await asyncio.sleep(0)


async def _stop(task: asyncio.Task[None]) -> None:
    """Cancels the driver's task and waits for it to end."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _driver_with_queue() -> tuple[
    FakeClock, OperatorMetrics, WorkerGate, list[float], AdaptiveConcurrency
]:
    """A driver of one worker on a fake clock at 0, whose queue depth is ``depth[0]``."""
    clock, metrics = FakeClock(start=0.0), OperatorMetrics()
    metrics.init_controller("c", 1)
    gate = WorkerGate(1, clock)
    depth = [0.0]
    auto = AdaptiveConcurrency("c", gate, gate.set_limit, lambda: depth[0], metrics, None,
                               LawSettings(), clock)  # fmt: skip
    return clock, metrics, gate, depth, auto


async def _burst_after_idle(arrival: float, until: float) -> list[tuple[float, int]]:
    """Runs the driver on a fake clock: idle until ``arrival``, then a backlog of 50 that one
    worker takes, a reconcile finishing every 0.1 s; returns (time, limit) at every change."""
    clock, metrics, gate, depth, auto = _driver_with_queue()
    task = asyncio.create_task(auto.run())
    changes: list[tuple[float, int]] = []
    step, t, done_at = 0.05, 0.0, arrival + 0.1
    while t < until - 1e-9:
        t = round(t + step, 2)
        clock.set(t)
        if abs(t - arrival) < 1e-9:
            depth[0] = 50.0
            gate.started()
        if t > arrival and abs(t - done_at) < 1e-9:
            gate.finished()
            metrics.reconcile_total.labels(controller="c", result="success").inc()
            gate.started()
            done_at = round(done_at + 0.1, 2)
        await _let_the_driver_run()
        if not changes or changes[-1][1] != gate.limit:
            changes.append((t, gate.limit))
    await _stop(task)
    return changes


async def test_a_slow_start_window_restarts_when_a_burst_reaches_an_idle_controller() -> None:
    # The driver looks at 0.05 s (its window opens), 0.3, 0.55, 0.8...; the burst comes at
    # 0.35 s. Judged from 0.05 s the window was busy only 70% at its end (1.05 s), so the first
    # doubling waited for the next window (1.3 s); restarted at the look that found the queue
    # backed up (0.55 s), it doubles at the next look.
    changes = await _burst_after_idle(arrival=0.35, until=1.5)
    assert changes == [(0.05, 1), (0.8, 2)]


async def test_work_that_comes_and_goes_at_every_look_still_closes_the_windows() -> None:
    # Queued at one look, idle at the next: each arrival could restart the window; once per
    # window, every window still closes within two intervals (slow start: 1 s).
    clock, _, _, depth, auto = _driver_with_queue()
    closed: list[float] = []
    update = auto.law.update

    def counted(w: Window) -> Decision:
        closed.append(clock.now())
        return update(w)

    auto.law.update = counted  # type: ignore[method-assign]
    task = asyncio.create_task(auto.run())
    for tick in range(1, 41):  # 10 s of looks, 0.25 s apart
        depth[0] = 50.0 if tick % 2 else 0.0
        clock.set(tick * 0.25)
        await _let_the_driver_run()
    await _stop(task)
    assert len(closed) >= 5, closed
    assert all(b - a <= 2.0 + 1e-9 for a, b in itertools.pairwise([0.0, *closed]))


async def test_the_driver_rebases_once_the_reconciles_since_a_cut_suffice() -> None:
    # Out of slow start at 8 workers (2 s windows), a reconcile finishing every 0.05 s with one
    # request each. The API server slows tenfold at 3 s and stays slow; the window ending near
    # 4 s (the driver starts at the first look, 0.05 s) cuts to 6. The driver looks every 0.25 s after the cut and takes the new base once 14
    # reconciles (8 in flight, 6 workers) ran since, 0.75 s later, not at the cooldown's end
    # (three 2 s windows).
    clock, metrics = FakeClock(start=0.0), OperatorMetrics()
    metrics.init_controller("c", 8)
    rest = RestClientMetrics(metrics.registry)
    gate = WorkerGate(8, clock)
    auto = AdaptiveConcurrency("c", gate, gate.set_limit, lambda: 50.0, metrics, rest,
                               LawSettings(slow_start=False), clock)  # fmt: skip
    task = asyncio.create_task(auto.run())
    cut: float | None = None
    rebased: float | None = None
    for tick in range(1, 201):  # 10 s
        t = round(tick * 0.05, 2)
        clock.set(t)
        rest.observe_request("GET", "h", 0.2 if t > 3.0 else 0.02)
        metrics.reconcile_total.labels(controller="c", result="success").inc()
        await _let_the_driver_run()
        if cut is None and gate.limit == 6:
            cut = t
        if rebased is None and (auto.law.base_latency or 0) > 0.1:
            rebased = t
    await _stop(task)
    assert cut is not None and 4.0 <= cut <= 4.1
    assert rebased is not None and rebased - cut <= 1.0, (cut, rebased)
    assert gate.limit == 6  # the cooldown still holds the next increase (no backlog grows it)


async def _two_slow_start_windows(slowdown_at: float | None) -> list[tuple[float, int]]:
    """Runs the driver from 2 workers in slow start, always busy with 50 queued, one reconcile
    every 0.5 s (too few to close a window early) and 10 requests every 0.05 s answered in
    20 ms, or in 100 ms from ``slowdown_at``; returns (time, limit) at every change."""
    clock, metrics = FakeClock(start=0.0), OperatorMetrics()
    metrics.init_controller("c", 2)
    rest = RestClientMetrics(metrics.registry)
    gate = WorkerGate(2, clock)
    gate.busy_seconds = clock.now  # type: ignore[method-assign]  # every worker always busy
    auto = AdaptiveConcurrency("c", gate, gate.set_limit, lambda: 50.0, metrics, rest,
                               LawSettings(), clock)  # fmt: skip
    task = asyncio.create_task(auto.run())
    changes = [(0.0, gate.limit)]
    for tick in range(1, 43):  # 2.1 s
        t = round(tick * 0.05, 2)
        clock.set(t)
        slow = slowdown_at is not None and t > slowdown_at
        for _ in range(10):
            rest.observe_request("GET", "h", 0.1 if slow else 0.02)
        if tick % 10 == 0:
            metrics.reconcile_total.labels(controller="c", result="success").inc()
        await _let_the_driver_run()
        if changes[-1][1] != gate.limit:
            changes.append((t, gate.limit))
    await _stop(task)
    return changes


async def test_slow_start_does_not_double_on_a_window_whose_last_look_saw_the_api_slow() -> None:
    # The second window's mean (16 looks' worth at 20 ms, 4 at 100 ms: 36 ms against a base of
    # 20 ms) is calm, and doubles the limit when the API server stays fast; its latest look
    # (0.25 s, mostly at 100 ms) is not, so a slowdown 0.2 s before the window ends holds it.
    calm = await _two_slow_start_windows(slowdown_at=None)
    assert [limit for _, limit in calm] == [2, 4, 8]
    slowed = await _two_slow_start_windows(slowdown_at=calm[-1][0] - 0.2)
    assert [limit for _, limit in slowed] == [2, 4], (calm, slowed)
