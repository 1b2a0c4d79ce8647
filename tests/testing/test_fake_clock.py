"""FakeClock: sleepers wake in deadline order, wall time follows, autojump never blocks."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from rayop.testing import WALL_START, FakeClock, settle


async def test_sleepers_wake_in_deadline_order_then_sleep_order() -> None:
    clock = FakeClock(0.0)
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [
        asyncio.create_task(sleeper(name, seconds))
        for name, seconds in [("late", 3.0), ("first", 1.0), ("tie-a", 2.0), ("tie-b", 2.0)]
    ]
    await settle()
    assert clock.has_sleepers() and clock.next_deadline() == 1.0
    clock.step(1.5)
    await settle()
    assert woke == ["first"]
    clock.set(10.0)
    await asyncio.gather(*tasks)
    assert woke == ["first", "tie-a", "tie-b", "late"]
    assert not clock.has_sleepers() and clock.next_deadline() is None
    assert clock.sleeps == [3.0, 1.0, 2.0, 2.0]


async def test_time_never_moves_backwards_and_wall_follows_now() -> None:
    clock = FakeClock(5.0)
    clock.set(2.0)
    assert clock.now() == 5.0
    clock.step(0.25)
    assert clock.wall() == WALL_START + timedelta(seconds=5.25)
    assert clock.wall().tzinfo is not None


async def test_advance_to_next_wakes_the_earliest_sleeper() -> None:
    clock = FakeClock(0.0)
    task = asyncio.create_task(clock.sleep(7.0))
    await settle()
    assert clock.advance_to_next()
    await task
    assert clock.now() == 7.0
    assert not clock.advance_to_next()


async def test_autojump_sleeps_return_at_once_and_add_up() -> None:
    clock = FakeClock(0.0, autojump=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await clock.sleep(30.0)
    await asyncio.gather(clock.sleep(5.0), clock.sleep(5.0))
    await clock.sleep(-1.0)
    assert clock.now() == 40.0
    assert clock.sleeps == [30.0, 5.0, 5.0, -1.0]
    assert loop.time() - started < 1.0


async def test_autojump_wakes_ordinary_sleepers_it_passes() -> None:
    clock = FakeClock(0.0, autojump=True)
    clock.autojump = False
    waiting = asyncio.create_task(clock.sleep(2.0))
    await settle()
    clock.autojump = True
    await clock.sleep(3.0)
    await settle()
    assert waiting.done()


def test_time_is_the_wall_time_in_epoch_seconds() -> None:
    clock = FakeClock(10.0)
    assert clock.time() == WALL_START.timestamp() + 10.0
    clock.step(2.5)
    assert clock.time() == clock.wall().timestamp()
