"""One owner for a component's background tasks: an ``asyncio.TaskGroup`` in a host task.

Components that start work from synchronous code (an informer's ``start()``, the event
recorder's first event) cannot open a ``TaskGroup`` around their callers. A
:class:`TaskSupervisor` gives them one: :meth:`TaskSupervisor.spawn` never blocks; the first
call starts a host task that enters a ``TaskGroup``, and every task spawned belongs to that
group. :meth:`TaskSupervisor.stop` cancels the host, so the group cancels every task and waits
for all of them; when it returns, nothing the supervisor started is still pending. A task that
fails makes the group cancel its siblings (structured concurrency); the failure is logged with
the supervisor's name and raised by :meth:`TaskSupervisor.wait`. After a stop or a failure the
next spawn starts a fresh group.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)

Work = Coroutine[Any, Any, None]
"""What a supervised task runs."""


class TaskSupervisor:
    """Owns background tasks in one ``asyncio.TaskGroup`` and ends them together.

    Args:
        name: Names the owner in task names and log lines (``"informer pods@*"``).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._host: asyncio.Task[None] | None = None
        self._group: asyncio.TaskGroup | None = None
        self._backlog: list[tuple[Work, str]] = []
        self._failure: BaseException | None = None

    @property
    def running(self) -> bool:
        """Whether a group is open (something was spawned and neither stopped nor failed)."""
        return self._host is not None and not self._host.done()

    def spawn(self, work: Work, *, name: str) -> None:
        """Runs ``work`` as a task of the group, opening the group if needed; never blocks."""
        if self._group is not None:
            self._group.create_task(work, name=f"{self.name}: {name}")
            return
        self._backlog.append((work, name))
        if not self.running:
            self._failure = None
            self._host = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def wait(self) -> None:
        """Blocks until the group has ended (after :meth:`stop`, or when a task failed).

        Raises:
            BaseException: The failure (an ``ExceptionGroup``) that ended the group, if any.
        """
        host = self._host
        if host is not None:
            await asyncio.wait([host])
        if self._failure is not None:
            raise self._failure

    async def stop(self) -> None:
        """Cancels every task and blocks until all have ended; a no-op when none runs."""
        host, self._host, self._group = self._host, None, None
        for work, _ in self._backlog:
            work.close()
        self._backlog.clear()
        if host is not None and not host.done():
            host.cancel()
            await asyncio.wait([host])

    async def _run(self) -> None:
        group = asyncio.TaskGroup()
        try:
            async with group:
                self._group = group
                while self._backlog:
                    work, name = self._backlog.pop(0)
                    group.create_task(work, name=f"{self.name}: {name}")
                await asyncio.get_running_loop().create_future()  # until cancelled by stop()
        except Exception as failure:
            log.exception("%s: a background task failed; the others were cancelled", self.name)
            self._failure = failure
        finally:
            if self._group is group:
                self._group = None
