"""Background work per key: one task per key, ``on_done`` only for work that ended by itself,
cancellation awaited (rayop.runtime.background_work)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from rayop.runtime.background_work import KeyedWork


async def test_one_task_per_key_and_on_done_only_when_the_work_ends_by_itself() -> None:
    work: KeyedWork[str] = KeyedWork(name="test")
    done: list[str] = []
    work.on_done = done.append
    release = {k: asyncio.Event() for k in "abc"}

    def job(key: str, fail: bool = False) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await release[key].wait()
            if fail:
                raise RuntimeError("boom")

        return run

    assert work.start("a", job("a"))
    assert not work.start("a", job("a")), "a second start while one runs does nothing"
    assert work.start("b", job("b", fail=True))
    assert work.start("c", job("c"))
    assert sorted(work.keys()) == ["a", "b", "c"]

    release["a"].set()
    release["b"].set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(done) == ["a", "b"], "a failed work ends its key too"
    assert work.keys() == ["c"]

    assert await work.cancel(lambda key: key == "c") == 1
    assert len(work) == 0 and sorted(done) == ["a", "b"], "cancelled work reports nothing"


async def test_close_cancels_everything_and_waits() -> None:
    work: KeyedWork[int] = KeyedWork()
    ended: list[int] = []

    def forever(key: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                ended.append(key)

        return run

    for key in range(3):
        work.start(key, forever(key))
    await asyncio.sleep(0)
    await work.close()
    assert sorted(ended) == [0, 1, 2] and len(work) == 0
