"""Sends Event writes in the background, retrying as client-go's ``tools/events`` does.

Writes wait in a queue bounded by memory, not by count: each holds an estimate of its size,
and once the waiting writes hold :data:`MAX_PENDING_BYTES` a new write is dropped (and
counted, reason ``queue_full``), never silently. A repeat of an event in a series takes no
place in the queue (it only raises a count), so the budget is spent on distinct events only.

:data:`WRITERS` tasks send the writes, each from a queue of its own; every write of one Event
goes to the same queue, so its patch never overtakes its create (with one queue, concurrent
writers let the patch reach the server first: a 404, a fallback create, a 409, a retry). A patch that finds no Event creates it instead. A write
the API server refuses with a Status is not retried (reason ``rejected``), except a create of a
series that already exists; a transport error is retried after 10 s (±25 %) up to
:data:`MAX_TRIES` times in all (then ``retries_exhausted``). A retry waits in its own task, so
it holds no writer.
"""

from __future__ import annotations

import asyncio
import logging
import random
import zlib
from collections.abc import Callable
from typing import Any, Literal, Protocol

from rayop.kube.errors import AlreadyExists, ApiError, NotFound, TransportError
from rayop.kube.resources import EVENTS
from rayop.runtime.clock import Clock
from rayop.runtime.events.metrics import UnsentReason
from rayop.runtime.events.series import EventWrite
from rayop.runtime.supervisor import TaskSupervisor

log = logging.getLogger(__name__)

MAX_PENDING_BYTES = 64 * 1024 * 1024
"""The memory budget of waiting writes: about 100,000 Events of a typical size."""

WRITE_OVERHEAD_BYTES = 560
"""The estimated size of a write besides its packed Event (the write, its name and namespace,
its place in the queue); with the packed Event, about the 640 bytes a typical write is given
(the packed Event is shared with the series cache, so this overstates what a write adds)."""

WRITERS = 8
"""Writes in flight at once (client-go's ``recordWorkers``)."""

MAX_TRIES = 12
"""client-go's ``maxTriesPerEvent``."""

RETRY_SLEEP = 10.0
"""client-go's ``defaultSleepDuration``; each sleep is jittered by up to +25 %."""


class EventClient(Protocol):
    """The part of :class:`rayop.kube.client.KubeClient` the recorder uses."""

    async def create(
        self, res: Any, obj: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        res: Any,
        name: str,
        body: Any,
        *,
        namespace: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


class EventWriter:
    """Owns the queue of Event writes and the tasks that send them.

    Args:
        client: Where the writes go (the recorder's own client, with its own rate limiter).
        clock: Time source of the retry sleeps.
        count_unsent: Called once for every event not written, with the reason.
        name: Names the writer's tasks.
        max_pending_bytes: The memory budget of waiting writes.
        retry_sleep: Seconds between two tries of a write that could not reach the server.
    """

    def __init__(
        self,
        client: EventClient,
        *,
        clock: Clock,
        count_unsent: Callable[[UnsentReason], None],
        name: str,
        max_pending_bytes: int = MAX_PENDING_BYTES,
        retry_sleep: float = RETRY_SLEEP,
    ) -> None:
        self._client = client
        self._clock = clock
        self._count_unsent = count_unsent
        self._max_bytes = max_pending_bytes
        self._retry_sleep = retry_sleep
        self._queues: list[asyncio.Queue[EventWrite]] = [asyncio.Queue() for _ in range(WRITERS)]
        """One queue per writer; an Event's writes all go to the same one, in order."""
        self._pending_bytes = 0
        self._tasks = TaskSupervisor(name)
        self._started = False
        self._dropped_logged = 0
        self._retrying = 0
        self.dropped = 0
        """Writes dropped because the queue had reached its memory budget."""

    @property
    def pending_bytes(self) -> int:
        """The estimated bytes of the writes waiting in the queue."""
        return self._pending_bytes

    def submit(self, write: EventWrite) -> bool:
        """Queues ``write``; never blocks. Returns False when it was dropped (and counted)."""
        if not write.size:
            write.size = WRITE_OVERHEAD_BYTES + len(write.packed)
        if self._pending_bytes + write.size > self._max_bytes:
            self.dropped += 1
            self._count_unsent("queue_full")
            if self.dropped >= 2 * self._dropped_logged:
                self._dropped_logged = self.dropped
                log.warning(
                    "event write queue full (%d bytes pending): %d events dropped so far",
                    self._pending_bytes,
                    self.dropped,
                )
            return False
        self._put(write)
        return True

    def spawn(self, work: Any, *, name: str) -> None:
        """Runs a background task of the recorder (a sweep) among the writer's tasks."""
        self._tasks.spawn(work, name=name)

    def _put(self, write: EventWrite) -> None:
        self._pending_bytes += write.size
        shard = zlib.crc32(f"{write.namespace}/{write.name}".encode()) % WRITERS
        self._queues[shard].put_nowait(write)
        if not self._started:
            self._started = True
            for i, queue in enumerate(self._queues):
                self._tasks.spawn(self._work(queue), name=f"writer {i}")

    async def _work(self, queue: asyncio.Queue[EventWrite]) -> None:
        while True:
            write = await queue.get()
            self._pending_bytes -= write.size
            try:
                await self._attempt(write)
            finally:
                queue.task_done()

    async def _attempt(self, write: EventWrite) -> None:
        write.tries += 1
        try:
            await self._send(write)
        except asyncio.CancelledError:
            raise
        except (TransportError, OSError, TimeoutError) as exc:
            log.warning(
                "unable to write event %s (may retry after sleeping): %r", _name(write), exc
            )
            self._retry(write)
        except AlreadyExists:
            if write.verb == "patch":  # the patch found none, the create found one: try again
                self._retry(write)
                return
            self._refused(write, "already exists")
        except ApiError as exc:
            self._refused(write, repr(exc))

    def _refused(self, write: EventWrite, why: str) -> None:
        log.warning("server rejected event %s (will not retry): %s", _name(write), why)
        self._count_unsent("rejected")
        # The series cache keeps a refused Event, as client-go's eventCache does: its next
        # repeat is a series PATCH (404, then a create), later ones only raise the count.

    async def _send(self, write: EventWrite) -> None:
        if write.verb == "patch":
            try:
                await self._client.patch(
                    EVENTS, write.name, write.body, namespace=write.namespace,
                    patch_type="strategic",
                )  # fmt: skip
                return
            except NotFound:
                pass  # the Event is gone: create it with its series
            event = write.whole()
            event["metadata"] = {
                k: v for k, v in event["metadata"].items() if k != "resourceVersion"
            }
            await self._client.create(EVENTS, event, namespace=write.namespace)
            return
        await self._client.create(EVENTS, write.body, namespace=write.namespace)

    def _retry(self, write: EventWrite) -> None:
        if write.tries >= MAX_TRIES:
            log.error("unable to write event %s (retry limit exceeded)", _name(write))
            self._count_unsent("retries_exhausted")
            return
        self._retrying += 1
        self._tasks.spawn(self._retry_later(write), name=f"retry {write.name}")

    async def _retry_later(self, write: EventWrite) -> None:
        await self._clock.sleep(self._retry_sleep * (1 + 0.25 * random.random()))
        self._retrying -= 1
        self._put(write)

    async def flush(self) -> None:
        """Blocks until every queued write has been attempted once (retries may follow)."""
        for queue in self._queues:
            await queue.join()

    async def stop(self) -> None:
        """Stops the writers and sweeps; counts what was still queued as ``shutdown``."""
        await self._tasks.stop()
        for _ in range(self._retrying):
            self._count_unsent("shutdown")
        self._retrying = 0
        for queue in self._queues:
            while not queue.empty():
                self._pending_bytes -= queue.get_nowait().size
                queue.task_done()
                self._count_unsent("shutdown")
        self._started = False


def _name(write: EventWrite) -> str:
    return f"{write.namespace}/{write.name}"
