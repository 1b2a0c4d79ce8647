"""The reconcile contract of :class:`rayop.runtime.reconcile.Reconciler`, one test per path."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

from rayop.runtime.controller import Controller, Request, Result, RetryAfter, TerminalError
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reconcile import is_terminal, retry_delay
from rayop.runtime.timeouts import clock_timeout
from rayop.testing import FakeClock, InMemorySource, settle

A = Request("ns", "a")


def sample(metrics: OperatorMetrics, name: str) -> float:
    for line in metrics.render().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not exposed")


def results(metrics: OperatorMetrics, result: str) -> float:
    return sample(
        metrics, f'controller_runtime_reconcile_total{{controller="c",result="{result}"}}'
    )


def errors(metrics: OperatorMetrics) -> float:
    return sample(metrics, 'controller_runtime_reconcile_errors_total{controller="c"}')


class Outcomes:
    """A reconciler that returns or raises the given outcomes in turn, then succeeds."""

    def __init__(self, *outcomes: Result | Exception) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def __call__(self, request: Request) -> Result:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@pytest.mark.parametrize("delay", [0, 0.0, -1.0, math.nan])
def test_result_refuses_a_non_positive_delay(delay: float) -> None:
    with pytest.raises(ValueError, match="requeue_after"):
        Result(requeue_after=delay)


def test_result_without_a_delay_means_no_timed_requeue() -> None:
    assert Result().requeue_after is None
    assert Result(requeue_after=0.001).requeue_after == 0.001


@pytest.mark.parametrize("delay", [0.0, -3.0])
def test_retry_after_refuses_a_non_positive_delay(delay: float) -> None:
    with pytest.raises(ValueError, match="retry delay"):
        RetryAfter(delay)


def test_retry_after_and_terminal_are_found_through_causes() -> None:
    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = RetryAfter(7.0, "dashboard not up")
    assert retry_delay(wrapped) == 7.0
    assert retry_delay(RuntimeError("plain")) is None
    assert str(RetryAfter(2.5)) == "retry after 2.5 s"
    assert str(RetryAfter(2.5, "dashboard not up")) == "dashboard not up"
    assert not is_terminal(wrapped)


@pytest.mark.parametrize("use_priority_queue", [True, False], ids=["priority", "classic"])
async def test_retry_after_requeues_after_exactly_its_delay_as_an_error(
    use_priority_queue: bool, caplog: pytest.LogCaptureFixture
) -> None:
    clock, metrics = FakeClock(), OperatorMetrics()
    reconcile = Outcomes(RuntimeError("boom"), RetryAfter(30.0, "not yet"))
    controller = Controller(
        "c",
        reconcile,
        sources=[InMemorySource([A])],
        clock=clock,
        metrics=metrics,
        use_priority_queue=use_priority_queue,
    )
    with caplog.at_level(logging.ERROR, logger="rayop.runtime.controller"):
        await controller.start()
        await settle()
        clock.step(0.005)  # the plain error's rate-limited retry
        await settle()
        assert reconcile.calls == 2
        clock.step(29.0)  # far beyond any backoff, short of the delay
        await settle()
        assert reconcile.calls == 2
        clock.step(1.0)
        await settle()
        assert reconcile.calls == 3
    assert controller.queue.num_requeues(A) == 0  # the final success forgot the history
    assert errors(metrics) == 2 and results(metrics, "error") == 2
    assert results(metrics, "success") == 1
    assert any("not yet" in r.getMessage() for r in caplog.records)
    await controller.stop()


async def test_retry_after_keeps_the_backoff_history() -> None:
    clock = FakeClock()
    reconcile = Outcomes(RuntimeError("one"), RetryAfter(1.0), RuntimeError("two"))
    controller = Controller("c", reconcile, sources=[InMemorySource([A])], clock=clock)
    await controller.start()
    await settle()
    clock.step(0.005)
    await settle()
    clock.step(1.0)
    await settle()
    assert reconcile.calls == 3
    clock.step(0.0099)  # the third failure waits 10 ms: the first one's backoff was not forgotten
    await settle()
    assert reconcile.calls == 3
    clock.step(0.0001)
    await settle()
    assert reconcile.calls == 4
    await controller.stop()


async def test_terminal_wins_over_a_retry_delay_in_the_same_chain() -> None:
    clock, metrics = FakeClock(), OperatorMetrics()
    error = TerminalError("bad spec")
    error.__cause__ = RetryAfter(1.0)
    reconcile = Outcomes(error)
    controller = Controller(
        "c", reconcile, sources=[InMemorySource([A])], clock=clock, metrics=metrics
    )
    await controller.start()
    await settle()
    clock.step(3600.0)
    await settle()
    assert reconcile.calls == 1
    assert (
        sample(metrics, 'controller_runtime_terminal_reconcile_errors_total{controller="c"}') == 1
    )
    await controller.stop()


async def test_clock_timeout_follows_the_injected_clock() -> None:
    clock = FakeClock()
    cancelled = asyncio.Event()

    async def body() -> None:
        async with clock_timeout(clock, 5.0) as scope:
            try:
                await asyncio.Event().wait()
            finally:
                cancelled.set()
        raise AssertionError(f"not cancelled ({scope.expired()})")

    task = asyncio.get_running_loop().create_task(body())
    await settle()
    clock.step(4.9)
    await settle()
    assert not cancelled.is_set()
    clock.step(0.1)
    with pytest.raises(TimeoutError):
        await task
    assert not clock.has_sleepers()  # the watchdog ended with the scope


async def test_clock_timeout_lets_a_quick_body_finish_and_ends_its_watchdog() -> None:
    clock = FakeClock()
    async with clock_timeout(clock, 5.0) as scope:
        await asyncio.sleep(0)
    assert not scope.expired()
    assert not clock.has_sleepers()
    async with clock_timeout(clock, None) as unlimited:
        await asyncio.sleep(0)
    assert not unlimited.expired()
