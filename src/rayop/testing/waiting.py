"""Waiting in tests: until a condition holds, or until the event loop has nothing left to run."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

Condition = Callable[[], bool] | Callable[[], Awaitable[bool]]
"""A check that a test waits on: a plain or an async callable returning a bool."""

FIRST_INTERVAL = 0.001
"""The first pause between two checks (seconds); each next pause doubles, up to ``interval``."""


async def eventually(
    condition: Condition,
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: str = "",
) -> None:
    """Blocks until ``condition()`` is true, checking it at once and then again and again.

    The pause between checks starts at :data:`FIRST_INTERVAL` and doubles up to ``interval``,
    so a condition that holds soon is seen soon and a long wait costs few checks. Time is the
    event loop's, so under looptime the wait is virtual.

    Args:
        condition: The check; an async one is awaited.
        timeout: How long to wait before failing (seconds).
        interval: The longest pause between two checks (seconds).
        what: Names the condition in the failure message (else its ``__name__`` or repr).

    Raises:
        AssertionError: ``condition`` did not hold within ``timeout``; the message reads
            ``not true within <timeout> s: <what>``.
    """
    pause = min(FIRST_INTERVAL, interval)
    try:
        async with asyncio.timeout(timeout):
            while not await _holds(condition):
                await asyncio.sleep(pause)
                pause = min(pause * 2, interval)
    except TimeoutError:
        label = what or getattr(condition, "__name__", repr(condition))
        raise AssertionError(f"not true within {timeout} s: {label}") from None


async def settle(rounds: int = 30) -> None:
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
