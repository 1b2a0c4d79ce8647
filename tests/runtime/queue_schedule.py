"""The driver shared by the queue property tests: workers, a schedule, and one ordered log.

Two worker tasks loop on get and wait for their release; the driver performs a generated
schedule. The worker-control operations (release the item a worker holds, step the fake clock,
cancel a worker blocked in get, resume it, yield to the loop) are the same for every queue and
live here; each queue's harness adds its own queue operations and what a get returns.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

from rayop.testing import settle
from rayop.testing.clock import FakeClock

WORKERS = 2
Event = tuple[object, ...]


class ScheduleHarness(ABC):
    """Runs the workers and the driver against a real queue, logging everything in order."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.log: list[Event] = []
        self.in_get = [False] * WORKERS
        self.release: list[asyncio.Future[None] | None] = [None] * WORKERS
        self.tasks: list[asyncio.Task[None]] = []
        self.paused: set[int] = set()

    @abstractmethod
    async def take(self, w: int) -> tuple[str, Event] | None:
        """Blocks in the queue's get; returns (key, the "got" event to log), None on shutdown."""

    @abstractmethod
    def finish(self, key: str) -> None:
        """Marks ``key`` done in the queue."""

    @abstractmethod
    def queue_op(self, op: Event) -> bool:
        """Performs ``op`` if it is a queue operation (logging it); returns whether it was."""

    @abstractmethod
    def len_event(self) -> Event:
        """The event logged after every operation (queue length and what else the model checks)."""

    @abstractmethod
    def shut_down(self) -> None:
        """Shuts the queue down."""

    async def worker(self, w: int) -> None:
        while True:
            self.in_get[w] = True
            try:
                taken = await self.take(w)
            finally:
                self.in_get[w] = False
            if taken is None:
                self.log.append(("exit", w))
                return
            key, got = taken
            self.log.append(got)
            release = asyncio.get_running_loop().create_future()
            self.release[w] = release
            await release
            self.finish(key)
            self.log.append(("done", w, key))

    async def settle(self) -> None:
        await settle(12)
        self.log.append(("quiet",))

    def holding(self) -> list[int]:
        return [w for w, f in enumerate(self.release) if f is not None and not f.done()]

    async def perform(self, op: Event) -> None:
        if not self.queue_op(op):
            await self.control(op)
        self.log.append(self.len_event())

    async def control(self, op: Event) -> None:
        """Performs a worker-control operation."""
        kind = op[0]
        if kind == "release":
            fut = self.release[int(op[1])]  # type: ignore[call-overload]
            if fut is not None and not fut.done():
                fut.set_result(None)
        elif kind == "step":
            await self.settle()
            self.clock.step(float(op[1]))  # type: ignore[arg-type]
            self.log.append(("step", self.clock.now()))
            await self.settle()
        elif kind == "cancel":
            w = int(op[1])  # type: ignore[call-overload]
            if self.in_get[w] and w not in self.paused:
                self.tasks[w].cancel()
                self.paused.add(w)
                self.log.append(("paused", w))
        elif kind == "resume":
            w = int(op[1])  # type: ignore[call-overload]
            if w in self.paused:
                self.paused.remove(w)
                self.log.append(("resumed", w))
                self.tasks[w] = asyncio.create_task(self.worker(w))
        elif kind == "yield":
            await settle(int(op[1]))  # type: ignore[call-overload]

    async def run(self, ops: list[Event], *, shutdown_at: int | None = None) -> None:
        """Runs the schedule (shutting down before op ``shutdown_at``), then drains and stops."""
        self.tasks = [asyncio.create_task(self.worker(w)) for w in range(WORKERS)]
        await self.settle()
        for i, op in enumerate(ops):
            if i == shutdown_at:
                await self.perform(("shutdown",))
            await self.perform(op)
        await self.perform(("step", 1000.0))
        for w in list(self.paused):
            await self.perform(("resume", w))
        await self.settle()
        while self.holding():
            for w in self.holding():
                await self.perform(("release", w))
            await self.settle()
        self.log.append(("drained",))
        self.shut_down()
        self.log.append(("shutdown",))
        await asyncio.wait_for(asyncio.gather(*self.tasks), 5)
