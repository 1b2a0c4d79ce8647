"""Records the operator's reconcile passes (``open_operator``'s ``wrap_reconcile``), so that a
test waits for a pass instead of sleeping until one has surely run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rayop.runtime.reconcile import Request, Result

ReconcileFunc = Callable[[Request], Awaitable[Result]]


@dataclass
class Pass:
    """One reconcile call: its request and when it started and ended (the loop's time)."""

    request: Request
    started: float
    ended: float | None = None


class PassLog:
    """Every pass of every wrapped controller, in the order they started."""

    def __init__(self) -> None:
        self.passes: list[Pass] = []

    def wrap(self, reconcile: ReconcileFunc) -> ReconcileFunc:
        """Returns ``reconcile``, recording each call."""

        async def recorded(request: Request) -> Result:
            loop = asyncio.get_running_loop()
            entry = Pass(request, loop.time())
            self.passes.append(entry)
            try:
                return await reconcile(request)
            finally:
                entry.ended = loop.time()

        return recorded

    def count(self, request: Request) -> int:
        """The number of passes of ``request`` started so far."""
        return sum(p.request == request for p in self.passes)

    def in_flight(self) -> bool:
        """True while any pass has not returned."""
        return any(p.ended is None for p in self.passes)

    def completed_since(self, request: Request, since: float) -> bool:
        """True once a pass of ``request`` that started at ``since`` or later has returned."""
        return any(
            p.request == request and p.started >= since and p.ended is not None
            for p in self.passes
        )

    def quiet_for(self, request: Request, seconds: float) -> bool:
        """True when no pass of ``request`` is running and none ended in the last ``seconds``."""
        now = asyncio.get_running_loop().time()
        mine = [p for p in self.passes if p.request == request]
        return all(p.ended is not None and now - p.ended >= seconds for p in mine)
