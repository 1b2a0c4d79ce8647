"""HTTPMode job submissions outside the pass: at most one background POST per key.

KubeRay v1.7 POSTs an HTTPMode RayJob's job to its head (``POST /api/jobs/``) inside the
reconcile; a head whose dashboard hangs holds the worker for the client's timeout (2 s direct,
10 s through the API server proxy) in every pass until it answers, and with one worker every
other RayJob waits behind it (kuberay#3909, #2646). :class:`JobSubmissions` runs the POST as a
task of its own instead: a pass starts it (:meth:`JobSubmissions.start`; a second start for the
same key and target while one runs does nothing), the task keeps how it ended (a
:class:`Finished`) and calls ``on_done(key)`` (the controller's enqueue), and the next pass
takes that outcome (:meth:`JobSubmissions.take`) and acts on it as the pass that POSTed would
have.

A submission ends unreported when its key is stopped (the RayJob is deleted, suspended, no
longer Running), replaced by a start for another target (its cluster changed), or
``still_wanted(key, target)`` says no when it ends (the poller's rule);
:meth:`JobSubmissions.close` ends them all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass

from rayop.controllers.dashboard.job_poller import PollTarget

__all__ = ["Finished", "JobSubmissions"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finished:
    """How one submission ended: ``error`` is what the POST raised, None when it was accepted."""

    error: Exception | None = None


@dataclass(eq=False)
class _Call:
    target: PollTarget
    task: asyncio.Task[None] | None = None
    finished: Finished | None = None


class JobSubmissions:
    """Runs each key's job submission in the background; see the module docstring.

    Args:
        still_wanted: Called when a submission ends; False drops its outcome unreported.
        name: Names the tasks in task names and logs.
    """

    def __init__(
        self,
        *,
        still_wanted: Callable[[Hashable, PollTarget], bool],
        name: str = "job submissions",
    ) -> None:
        self.on_done: Callable[[Hashable], None] = lambda key: None
        """Called with a key whose submission ended (the controller's enqueue, once it exists)."""
        self._still_wanted = still_wanted
        self._name = name
        self._calls: dict[Hashable, _Call] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        """The number of keys with a submission running or an outcome not taken yet."""
        return len(self._calls)

    def running(self, key: Hashable, target: PollTarget) -> bool:
        """Tells whether ``key``'s submission to ``target`` is still running."""
        call = self._calls.get(key)
        return call is not None and call.target == target and call.finished is None

    def start(
        self, key: Hashable, target: PollTarget, post: Callable[[], Awaitable[object]]
    ) -> None:
        """Runs ``post()`` in the background for ``key`` unless its submission to ``target``
        runs already; a submission to another target (or an outcome not taken) is dropped."""
        if self.running(key, target):
            return
        self.stop(key)
        call = _Call(target=target)
        self._calls[key] = call
        call.task = asyncio.get_running_loop().create_task(
            self._run(key, call, post), name=f"{self._name}: {key}"
        )
        self._tasks.add(call.task)
        call.task.add_done_callback(self._done)

    def take(self, key: Hashable, target: PollTarget) -> Finished | None:
        """Returns how ``key``'s submission to ``target`` ended and forgets it; None while it
        runs or when there is none (an ended one to another target is dropped)."""
        call = self._calls.get(key)
        if call is None or call.finished is None:
            return None
        del self._calls[key]
        return call.finished if call.target == target else None

    def stop(self, key: Hashable) -> None:
        """Ends ``key``'s submission (cancels its POST) and forgets it; never blocks."""
        call = self._calls.pop(key, None)
        if call is not None and call.task is not None:
            call.task.cancel()

    async def close(self) -> None:
        """Ends every key's submission; blocks until every task has ended."""
        self._calls.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed", self._name, task.get_name(), exc_info=task.exception())

    async def _run(self, key: Hashable, call: _Call, post: Callable[[], Awaitable[object]]) -> None:
        try:
            await post()
            finished = Finished()
        except Exception as err:  # the pass that takes it decides (as if its own POST raised)
            finished = Finished(err)
        if self._calls.get(key) is not call:
            return
        if not self._wanted(key, call.target):
            log.debug("%s: %s is no longer submitted", self._name, key)
            del self._calls[key]
            return
        call.finished = finished
        self.on_done(key)

    def _wanted(self, key: Hashable, target: PollTarget) -> bool:
        try:
            return self._still_wanted(key, target)
        except Exception:
            log.exception("%s: checking %s failed; its submission is dropped", self._name, key)
            return False
