"""Background polling of Ray jobs' status: one task and one dashboard connection per polled key.

KubeRay v1.7 asks the dashboard for a running RayJob's job info (``GET /api/jobs/<id>``) in every
reconcile, and requeues a running RayJob every 3 s to do so; with many RayJobs those passes
crowd the reconcile workers (KubeRay #4087, #4069, #3907). A :class:`JobInfoPoller` moves the GET
out of the pass: for each key (a RayJob) it keeps one client (one aiohttp session, so one kept-
alive connection to the head) and one task that GETs the job every ``interval`` seconds, keeps
the latest outcome (the :class:`~rayop.controllers.dashboard.models.JobInfo`, or the
:class:`~rayop.controllers.dashboard.errors.DashboardError` the GET raised) and calls
``on_change(key)`` when the outcome differs where a status could (job status, message,
start/end time, or which kind of answer it was), and for the key's first answer and an answer a
pass asked for. A running job whose answer does not change costs one GET per interval and
nothing else.

A pass never waits for the dashboard (a hanging one would hold the controller's worker, and
with one worker every other RayJob: kuberay#3909, #2646): :meth:`JobInfoPoller.answer` returns
at once, None while the key's first answer (or a fresh answer the pass asked for) is still
coming; ``on_change`` enqueues the key when it arrives.

A task ends when its key is stopped, replaced by another :class:`PollTarget`, or
``still_wanted(key, target)`` says no at a tick (the RayJob is gone or no longer running, its
cluster is gone); :meth:`JobInfoPoller.close` ends them all. The tasks are independent (one
failing ends only its own key's polling, and is logged); a client is closed by the task that
used it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

from rayop.controllers.dashboard.errors import DashboardError, JobNotFound
from rayop.controllers.dashboard.models import JobInfo
from rayop.runtime.clock import Clock

__all__ = ["JobInfoClient", "JobInfoPoller", "Outcome", "PollTarget", "changed"]

log = logging.getLogger(__name__)

Outcome = JobInfo | DashboardError
"""What one GET of a job gave: its info, or the error (``JobNotFound`` for a 404)."""


class JobInfoClient(Protocol):
    """The part of a dashboard client the poller uses; closed by the poller."""

    async def get_job_info(self, job_id: str) -> JobInfo: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, kw_only=True)
class PollTarget:
    """What one key polls: a job on one head; any change of it restarts the polling."""

    job_id: str
    dashboard_url: str
    cluster_uid: str
    token: str | None = None


def changed(old: Outcome | None, new: Outcome) -> bool:
    """Tells whether ``new`` differs from ``old`` where a RayJob's status could change."""
    if old is None:
        return True
    if isinstance(old, JobInfo) and isinstance(new, JobInfo):
        return (old.status, old.message, old.start_time, old.end_time) != (
            new.status,
            new.message,
            new.start_time,
            new.end_time,
        )
    if isinstance(old, JobInfo) or isinstance(new, JobInfo):
        return True
    return isinstance(old, JobNotFound) != isinstance(new, JobNotFound)


@dataclass(eq=False)
class _Entry:
    target: PollTarget
    client: JobInfoClient
    outcome: Outcome | None = None
    sent: int = 0
    """GETs sent so far (the first is number 1)."""
    answered: int = 0
    """The number of the GET :attr:`outcome` answers."""
    fresh_from: int | None = 1
    """A pass asked for the answer to a GET numbered this or later (a new entry's first GET
    is sent after the pass that started it); None: no pass waits for a fresh answer."""
    told: bool = False
    """``on_change`` was called for the answer :attr:`fresh_from` asks for."""
    sleeper: asyncio.Task[None] | None = None
    woken: bool = False
    stopped: bool = False

    def wake(self) -> None:
        """Cuts the wait before the next GET short (a pass wants a fresh answer, or stop)."""
        self.woken = True
        if self.sleeper is not None:
            self.sleeper.cancel()


class JobInfoPoller:
    """Polls each key's job in the background; see the module docstring.

    Args:
        interval: Seconds between two GETs of one job (> 0).
        clock: Time of the waits between GETs.
        still_wanted: Called at each tick after the first GET; False ends the key's polling.
        name: Names the poller in task names and logs.
    """

    def __init__(
        self,
        *,
        interval: float,
        clock: Clock,
        still_wanted: Callable[[Hashable, PollTarget], bool],
        name: str = "job poller",
    ) -> None:
        if interval <= 0:
            raise ValueError(f"the poll interval must be > 0, got {interval}")
        self.interval = interval
        self.on_change: Callable[[Hashable], None] = lambda key: None
        """Called with a key whose outcome changed (the controller's enqueue, once it exists)."""
        self._clock = clock
        self._still_wanted = still_wanted
        self._entries: dict[Hashable, _Entry] = {}
        self._name = name
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        """The number of keys being polled."""
        return len(self._entries)

    def polling(self, key: Hashable) -> PollTarget | None:
        """Returns what ``key`` polls, or None when it is not polled."""
        entry = self._entries.get(key)
        return None if entry is None else entry.target

    async def answer(
        self,
        key: Hashable,
        target: PollTarget,
        open_client: Callable[[], Awaitable[JobInfoClient]],
        *,
        needs_fresh: Callable[[Outcome], bool] = lambda outcome: False,
    ) -> Outcome | None:
        """Returns ``key``'s latest outcome for ``target``, polling it from now on; never waits
        for the dashboard.

        None: no answer to use yet. A key not polled yet (or polling another target) starts
        with a client from ``open_client`` (its first answer calls ``on_change``). A latest
        outcome that ``needs_fresh`` (a decision an answer up to one interval old is too old
        for) asks for a GET now and gives None; the answer to it calls ``on_change``, and the
        next call returns it whatever it is.
        """
        entry = self._entries.get(key)
        if entry is None or entry.target != target:
            self.stop(key)
            entry = _Entry(target=target, client=await open_client())
            self._entries[key] = entry
            self._spawn(key, entry)
            return None
        outcome = entry.outcome
        if outcome is None:
            return None
        if entry.fresh_from is not None:
            if entry.answered < entry.fresh_from:
                return None  # the fresh answer is still coming
            entry.fresh_from = None
            return outcome
        if needs_fresh(outcome):
            entry.fresh_from, entry.told = entry.sent + 1, False
            entry.wake()
            return None
        return outcome

    def refresh(self, key: Hashable) -> None:
        """Forgets ``key``'s outcome and GETs it again now (after a submission, say)."""
        entry = self._entries.get(key)
        if entry is None:
            return
        self.stop(key)
        fresh = _Entry(target=entry.target, client=entry.client)
        entry.client = _Closed()
        self._entries[key] = fresh
        self._spawn(key, fresh)

    def stop(self, key: Hashable) -> None:
        """Ends ``key``'s polling (its task closes its client); never blocks."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry.stopped = True
            entry.wake()

    async def close(self) -> None:
        """Ends every key's polling; blocks until every task has ended."""
        for key in list(self._entries):
            self.stop(key)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def _spawn(self, key: Hashable, entry: _Entry) -> None:
        task = asyncio.get_running_loop().create_task(
            self._poll(key, entry), name=f"{self._name}: {key}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed", self._name, task.get_name(), exc_info=task.exception())

    async def _poll(self, key: Hashable, entry: _Entry) -> None:
        try:
            while not entry.stopped:
                entry.sent += 1
                number = entry.sent
                outcome = await _fetch(entry.client, entry.target.job_id)
                if entry.stopped:
                    return
                previous, entry.outcome, entry.answered = entry.outcome, outcome, number
                asked = entry.fresh_from is not None and number >= entry.fresh_from
                asked, entry.told = asked and not entry.told, entry.told or asked
                if asked or changed(previous, outcome):
                    self.on_change(key)
                await self._pause(entry)
                if entry.stopped:
                    return
                if not self._wanted(key, entry.target):
                    log.debug("job poller: %s is no longer polled", key)
                    if self._entries.get(key) is entry:
                        self.stop(key)
                    return
        except Exception:  # never end the other keys' polling (they share a task group)
            log.exception("job poller: polling %s failed", key)
        finally:
            entry.stopped = True
            if self._entries.get(key) is entry:
                del self._entries[key]
            with contextlib.suppress(Exception):
                await asyncio.shield(entry.client.close())

    async def _pause(self, entry: _Entry) -> None:
        """Waits one interval, or less when the entry is woken (never past a wake)."""
        if not entry.woken:
            sleeper = asyncio.get_running_loop().create_task(self._clock.sleep(self.interval))
            entry.sleeper = sleeper
            try:
                await asyncio.wait({sleeper})
            finally:
                entry.sleeper = None
                sleeper.cancel()
        entry.woken = False

    def _wanted(self, key: Hashable, target: PollTarget) -> bool:
        try:
            return self._still_wanted(key, target)
        except Exception:
            log.exception("job poller: checking %s failed; its polling ends", key)
            return False


async def _fetch(client: JobInfoClient, job_id: str) -> Outcome:
    """One GET; every failure is an outcome (an unexpected one becomes a DashboardError)."""
    try:
        return await client.get_job_info(job_id)
    except DashboardError as err:
        return err
    except Exception as err:  # a bug in decoding, say: polling goes on, the pass sees it
        log.exception("job poller: GET job %s failed", job_id)
        return DashboardError(f"GetJobInfo fail: {err}")


class _Closed:
    """The client of a replaced entry: the new entry owns the real one."""

    async def get_job_info(self, job_id: str) -> JobInfo:
        raise DashboardError("GetJobInfo fail: the poller was refreshed")

    async def close(self) -> None:
        return None
