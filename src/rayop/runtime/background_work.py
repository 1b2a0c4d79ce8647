"""Background work per key: at most one task per key, cancelled and awaited on demand.

A controller that hands part of a pass to a task of its own (so that the pass, and the worker
running it, can end) keeps the task here under a key (for instance an object and a part of it).
:meth:`KeyedWork.start` starts a key's task unless one runs already; when a task ends by itself
its key is freed and ``on_done(key)`` is called (typically the controller's enqueue, so that a
pass sees what the work did). :meth:`KeyedWork.cancel` cancels the tasks of the keys a predicate
picks and waits until they have ended (no ``on_done`` for those), so that whoever forgets an
object (its deletion, the sharding drain) knows nothing of it still runs;
:meth:`KeyedWork.close` does so for every key (operator shutdown).

The work's own errors are its business: a task that raises is logged and its key freed, like
one that returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["KeyedWork"]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class KeyedWork(Generic[K]):
    """At most one background task per key; see the module docstring.

    Args:
        name: Names the tasks (task names, logs).
    """

    def __init__(self, *, name: str = "background work") -> None:
        self.on_done: Callable[[K], None] = lambda key: None
        """Called with a key whose task ended by itself (not when cancelled)."""
        self._name = name
        self._tasks: dict[K, asyncio.Task[None]] = {}

    def __len__(self) -> int:
        """The number of keys whose task runs."""
        return len(self._tasks)

    def running(self, key: K) -> bool:
        """Tells whether ``key``'s task runs."""
        return key in self._tasks

    def keys(self) -> list[K]:
        """The keys whose task runs."""
        return list(self._tasks)

    def start(self, key: K, work: Callable[[], Awaitable[None]]) -> bool:
        """Runs ``work()`` as ``key``'s task unless one runs already; never blocks.

        The task runs in a copy of the caller's context (contextvars), as any task does.

        Returns:
            Whether a task was started.
        """
        if key in self._tasks:
            return False
        task = asyncio.get_running_loop().create_task(
            self._run(key, work), name=f"{self._name}: {key}"
        )
        self._tasks[key] = task
        return True

    async def cancel(self, which: Callable[[K], bool]) -> int:
        """Cancels the tasks of the keys ``which`` picks; blocks until each has ended.

        Returns:
            How many tasks were cancelled.
        """
        tasks = [task for key, task in list(self._tasks.items()) if which(key)]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        return len(tasks)

    async def close(self) -> None:
        """Cancels every task; blocks until all have ended."""
        await self.cancel(lambda key: True)

    async def _run(self, key: K, work: Callable[[], Awaitable[None]]) -> None:
        me = asyncio.current_task()
        ended = False
        try:
            await work()
            ended = True
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: the work of %s failed", self._name, key)
            ended = True
        finally:
            if self._tasks.get(key) is me:
                del self._tasks[key]
        if ended:
            self.on_done(key)
