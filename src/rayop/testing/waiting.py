"""Waiting in tests: until a condition holds, or until the event loop has nothing left to run."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

Condition = Callable[[], bool] | Callable[[], Awaitable[bool]]
"""A check that a test waits on: a plain or an async callable returning a bool."""


async def eventually(
    condition: Condition,
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: str = "",
) -> None:
    """Blocks until ``condition()`` is true, checking it every ``interval`` seconds.

    Time is the event loop's, so under looptime the wait is virtual.

    Args:
        condition: The check; an async one is awaited.
        timeout: How long to wait before failing (seconds).
        interval: How long to sleep between checks (seconds).
        what: Names the condition in the failure message.

    Raises:
        AssertionError: ``condition`` did not hold within ``timeout``.
    """
    try:
        async with asyncio.timeout(timeout):
            while not await _holds(condition):
                await asyncio.sleep(interval)
    except TimeoutError:
        label = what or getattr(condition, "__name__", repr(condition))
        raise AssertionError(f"not true within {timeout} s: {label}") from None


async def settle(rounds: int = 20) -> None:
    """Yields to the event loop ``rounds`` times, so that ready callbacks and tasks run.

    Never sleeps: it moves neither the real nor the virtual time.
    """
    for _ in range(rounds):
        await asyncio.sleep(0)


async def _holds(condition: Condition) -> bool:
    value = condition()
    if inspect.isawaitable(value):
        return bool(await value)
    return bool(value)
