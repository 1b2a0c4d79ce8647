"""eventually: returns once the condition holds, names the condition when it never does."""

from __future__ import annotations

import asyncio

import pytest

from rayop.testing import eventually, settle


async def test_returns_at_once_when_the_condition_holds() -> None:
    calls: list[int] = []

    def holds() -> bool:
        calls.append(1)
        return True

    await eventually(holds, timeout=0.5)
    assert calls == [1]


async def test_waits_for_a_condition_that_comes_true_later() -> None:
    flag = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, flag.set)
    await eventually(flag.is_set, timeout=5)
    assert flag.is_set()


async def test_awaits_an_async_condition() -> None:
    seen = 0

    async def third_time() -> bool:
        nonlocal seen
        seen += 1
        return seen >= 3

    await eventually(third_time, timeout=5)
    assert seen == 3


@pytest.mark.looptime
async def test_failure_names_the_condition_and_the_timeout() -> None:
    with pytest.raises(AssertionError, match=r"^not true within 12 s: the sky falls$"):
        await eventually(lambda: False, timeout=12, what="the sky falls")


@pytest.mark.looptime
async def test_failure_falls_back_to_the_function_name() -> None:
    def pigs_fly() -> bool:
        return False

    with pytest.raises(AssertionError, match="pigs_fly"):
        await eventually(pigs_fly, timeout=1)


@pytest.mark.looptime
async def test_polls_no_more_often_than_the_interval_once_backed_off() -> None:
    checks = 0

    def never() -> bool:
        nonlocal checks
        checks += 1
        return False

    with pytest.raises(AssertionError):
        await eventually(never, timeout=10, interval=1.0)
    assert checks <= 10 + 11  # the backoff ramp (1 ms doubling to 1 s) plus one a second


async def test_settle_runs_ready_tasks_without_sleeping() -> None:
    loop = asyncio.get_running_loop()
    done: list[int] = []

    async def chain(n: int) -> None:
        for i in range(n):
            await asyncio.sleep(0)
            done.append(i)

    task = asyncio.create_task(chain(5))
    started = loop.time()
    await settle()
    assert task.done() and done == [0, 1, 2, 3, 4]
    assert loop.time() - started < 0.5
