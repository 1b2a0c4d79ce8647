"""The reconcile contract: requests, results, errors, and what the controller does with them.

A reconciler is ``async def reconcile(request: Request) -> Result``:

- returning ``Result()`` is success: the request's backoff history is forgotten;
- ``Result(requeue_after=s)`` with ``s > 0`` forgets the history and reconciles again in ``s``
  seconds;
- ``Result(requeue=True)`` requeues with rate limiting, keeping the history (backoff grows);
- raising an ``Exception`` is the error path: the request is requeued rate-limited;
- raising :class:`TerminalError` (or an exception caused by one) is an error that is counted and
  logged but not requeued (and not forgotten).

Go's error/panic split maps onto Python's ``Exception``/``BaseException`` split. Any
``Exception`` is an *error* (controller-runtime's ``err != nil``). A *panic* is a
``BaseException`` that is not an ``Exception`` escaping the reconciler: in practice a stray
``asyncio.CancelledError`` (the reconciler awaited something that was cancelled while the worker
itself was not) or a custom ``BaseException``. ``KeyboardInterrupt``, ``SystemExit`` and a genuine
cancellation of the worker always propagate. A panic increments ``reconcile_panics_total``; with
``recover_panic`` it becomes a :class:`ReconcilePanic` error ("panic: ... [recovered]") that takes
the error path, otherwise it is logged and raised as :class:`ReconcilePanic`, which crashes the
controller (controller-machinery.md C4-C6).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from rayop.runtime.clock import Clock
from rayop.runtime.metrics import ControllerSeries

logger = logging.getLogger("rayop.runtime.controller")

current_reconcile_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "current_reconcile_id", default=None
)
"""The UUID of the reconcile running in the current task, for logging; None outside one."""


@dataclass(frozen=True, slots=True)
class Request:
    """Names the object to reconcile; hashable, so it is the workqueue key."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


current_controller: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "current_controller", default=None
)
"""The name of the controller whose reconcile runs in the current task, for logging."""

current_request: contextvars.ContextVar[Request | None] = contextvars.ContextVar(
    "current_request", default=None
)
"""The request being reconciled in the current task, for logging; None outside a reconcile."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """What a successful reconcile asks for next.

    Attributes:
        requeue: Requeue with rate limiting, keeping the backoff history (deprecated upstream).
        requeue_after: When > 0, forget the backoff history and reconcile again after this many
            seconds; takes precedence over ``requeue``.
        priority: The priority of the requeue (priority queue only); None keeps the current one.
    """

    requeue: bool = False
    requeue_after: float = 0.0
    priority: int | None = None


class TerminalError(Exception):
    """A reconcile error that retrying cannot fix: counted and logged, never requeued."""


class ReconcilePanic(Exception):
    """A panic (see the module docstring) escaping a reconciler, as an error."""


class Reconciler(Protocol):
    """An object that reconciles requests; pass its bound ``reconcile`` to a controller."""

    async def reconcile(self, request: Request) -> Result:
        """Drives the named object towards its desired state; the contract is the module's."""
        ...


ReconcileFunc = Callable[[Request], Awaitable[Result]]
"""``async def reconcile(request) -> Result``."""


class Requeuer(Protocol):
    """The queue operations result handling needs; priority is ignored by the classic queue."""

    def add_rate_limited(self, request: Request, priority: int | None) -> None: ...

    def add_after(self, request: Request, seconds: float, priority: int | None) -> None: ...

    def forget(self, request: Request) -> None: ...


def is_terminal(error: BaseException) -> bool:
    """Tells whether ``error`` is a TerminalError or was raised ``from`` one (like errors.Is)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, TerminalError):
            return True
        seen = seen.__cause__
    return False


async def invoke(
    reconcile: ReconcileFunc,
    request: Request,
    *,
    timeout: float | None,
    clock: Clock,
    series: ControllerSeries,
    recover_panic: bool,
) -> tuple[Result | None, Exception | None]:
    """Runs one reconcile and returns ``(result, None)`` or ``(None, error)``; blocks meanwhile.

    A timeout (``timeout`` seconds on ``clock``) cancels the reconcile, counts
    reconcile_timeouts_total and is returned as a ``TimeoutError``.

    Raises:
        ReconcilePanic: a panic occurred and ``recover_panic`` is False.
    """
    task = asyncio.current_task()
    try:
        if timeout is None:
            result = await reconcile(request)
        else:
            result = await _with_timeout(reconcile(request), timeout, clock, series)
    except Exception as err:
        return None, err
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        if isinstance(exc, asyncio.CancelledError) and task is not None and task.cancelling():
            raise
        series.panics.inc()
        panic = ReconcilePanic(f"panic: {exc!r} [recovered]")
        panic.__cause__ = exc
        if not recover_panic:
            logger.error("Observed a panic in reconciler %s: %r", request, exc, exc_info=exc)
            raise panic from exc
        return None, panic
    return (result if result is not None else Result()), None


async def _with_timeout(
    pending: Awaitable[Result], timeout: float, clock: Clock, series: ControllerSeries
) -> Result:
    deadline = asyncio.timeout(None)

    async def expire() -> None:
        await clock.sleep(timeout)
        deadline.reschedule(asyncio.get_running_loop().time())

    try:
        async with deadline:
            watchdog = asyncio.get_running_loop().create_task(expire())
            try:
                return await pending
            finally:
                watchdog.cancel()
    finally:
        if deadline.expired():
            series.timeouts.inc()


def handle_outcome(
    queue: Requeuer,
    request: Request,
    priority: int | None,
    result: Result | None,
    error: Exception | None,
    series: ControllerSeries,
) -> None:
    """Requeues, forgets and counts one reconcile's outcome (controller-machinery.md C4)."""
    if error is not None:
        if is_terminal(error):
            series.terminal_errors.inc()
        else:
            queue.add_rate_limited(request, priority)
        series.errors.inc()
        series.error.inc()
        carried = getattr(error, "result", None)
        if isinstance(carried, Result) and (carried.requeue or carried.requeue_after > 0):
            logger.warning(
                "Warning: Reconciler returned both a result with either RequeueAfter or Requeue "
                "set and a non-nil error. RequeueAfter and Requeue will always be ignored if the "
                "error is non-nil (request %s)",
                request,
            )
        logger.error(
            "Reconciler error (request %s, reconcileID %s): %s",
            request, current_reconcile_id.get(), error, exc_info=error,
        )  # fmt: skip
        return
    assert result is not None
    if result.priority is not None:
        priority = result.priority
    if result.requeue_after > 0:
        queue.forget(request)
        queue.add_after(request, result.requeue_after, priority)
        series.requeue_after.inc()
    elif result.requeue:
        queue.add_rate_limited(request, priority)
        series.requeue.inc()
    else:
        queue.forget(request)
        series.success.inc()
