"""The reconcile contract: requests, results, errors, and what the controller does with them.

The contract itself is written once, in the :class:`Reconciler` docstring; :func:`invoke` runs one
reconcile and :func:`handle_outcome` is the one place that turns its outcome into queue
operations and metrics (as ``reconcileHandler`` does in controller-runtime's
``pkg/internal/controller/controller.go``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from rayop.runtime.clock import Clock
from rayop.runtime.metrics import ControllerSeries
from rayop.runtime.timeouts import clock_timeout

logger = logging.getLogger("rayop.runtime.controller")

_E = TypeVar("_E", bound=BaseException)

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
    """What a successful reconcile asks for next (see :class:`Reconciler` for the contract).

    Attributes:
        requeue: Requeue with rate limiting, keeping the backoff history (deprecated upstream).
        requeue_after: Forget the backoff history and reconcile again after this many seconds
            (> 0); None for no timed requeue. Takes precedence over ``requeue``.
        priority: The priority of the requeue (priority queue only); None keeps the current one.

    Raises:
        ValueError: ``requeue_after`` is zero, negative or NaN (say None for "no requeue").
    """

    requeue: bool = False
    requeue_after: float | None = None
    priority: int | None = None

    def __post_init__(self) -> None:
        if self.requeue_after is not None and not self.requeue_after > 0:
            raise ValueError(
                f"requeue_after must be > 0 seconds (None for no requeue), "
                f"not {self.requeue_after!r}"
            )


class TerminalError(Exception):
    """A reconcile error that retrying cannot fix: counted and logged, never requeued."""


class RetryAfter(Exception):
    """A reconcile error to retry after a fixed delay rather than the rate limiter's backoff.

    Raise it when the failure says when to look again (a dependency that is known to need a few
    seconds, a server's Retry-After). It is an error like any other (logged, counted in
    ``reconcile_errors_total`` and under ``result="error"``) and, like one, keeps the request's
    backoff history; only the delay of the requeue differs. Compare a plain exception (requeued
    after the rate limiter's growing backoff) and :class:`TerminalError` (never requeued).

    Args:
        delay: Seconds until the retry (> 0).
        reason: What failed, for the log line and ``str()``.

    Raises:
        ValueError: ``delay`` is not > 0.
    """

    def __init__(self, delay: float, reason: str = "") -> None:
        if not delay > 0:
            raise ValueError(f"a retry delay must be > 0 seconds, not {delay!r}")
        super().__init__(reason or f"retry after {delay:g} s")
        self.delay = delay
        self.reason = reason


class ReconcilePanic(Exception):
    """A panic (see :class:`Reconciler`) escaping a reconciler, as an error."""


class Reconciler(Protocol):
    """An object that reconciles requests; pass its bound ``reconcile`` to a controller.

    The contract, ``async def reconcile(request: Request) -> Result``, as the controller applies
    it to each outcome:

    - ``Result()`` is success: the request's backoff history is forgotten.
    - ``Result(requeue_after=s)`` (``s > 0``; a non-positive ``s`` is refused at construction)
      forgets the history and reconciles again in ``s`` seconds.
    - ``Result(requeue=True)`` requeues with rate limiting, keeping the history (backoff grows).
    - Raising an ``Exception`` is the error path: logged, counted, requeued rate-limited. A
      ``Result`` the exception carries (an attribute ``result``) is ignored, with a warning.
    - Raising :class:`RetryAfter` (or an exception raised ``from`` one) is an error requeued
      after exactly its ``delay`` instead of the backoff; the history is kept.
    - Raising :class:`TerminalError` (or an exception raised ``from`` one) is an error that is
      logged and counted but neither requeued nor forgotten.
    - A timeout (``reconciliation_timeout`` on the controller's clock) cancels the reconcile,
      counts ``reconcile_timeouts_total`` and takes the error path as a ``TimeoutError``.

    Go's error/panic split maps onto Python's ``Exception``/``BaseException`` split. A *panic*
    is a ``BaseException`` that is not an ``Exception`` escaping the reconciler: in practice a
    stray ``asyncio.CancelledError`` (the reconciler awaited something that was cancelled while
    the worker itself was not) or a custom ``BaseException``. ``KeyboardInterrupt``,
    ``SystemExit`` and a genuine cancellation of the worker always propagate. A panic increments
    ``reconcile_panics_total``; with ``recover_panic`` it becomes a :class:`ReconcilePanic` error
    ("panic: ... [recovered]") that takes the error path, otherwise it is logged and raised as
    :class:`ReconcilePanic`, which crashes the controller.
    """

    async def reconcile(self, request: Request) -> Result:
        """Drives the named object towards its desired state; blocks while it works."""
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
    return _in_causes(error, TerminalError) is not None


def retry_delay(error: BaseException) -> float | None:
    """Returns the delay of the :class:`RetryAfter` that ``error`` is or came from, or None."""
    found = _in_causes(error, RetryAfter)
    return found.delay if found is not None else None


def _in_causes(error: BaseException, kind: type[_E]) -> _E | None:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__
    return None


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
    scope: asyncio.Timeout | None = None
    try:
        async with clock_timeout(clock, timeout) as scope:
            return await pending
    finally:
        if scope is not None and scope.expired():
            series.timeouts.inc()


def handle_outcome(
    queue: Requeuer,
    request: Request,
    priority: int | None,
    result: Result | None,
    error: Exception | None,
    series: ControllerSeries,
) -> None:
    """Requeues, forgets and counts one reconcile's outcome as :class:`Reconciler` says."""
    if error is not None:
        delay = retry_delay(error)
        if is_terminal(error):
            series.terminal_errors.inc()
        elif delay is not None:
            queue.add_after(request, delay, priority)
        else:
            queue.add_rate_limited(request, priority)
        series.errors.inc()
        series.error.inc()
        carried = getattr(error, "result", None)
        if isinstance(carried, Result) and (carried.requeue or carried.requeue_after):
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
    if result.requeue_after is not None:
        queue.forget(request)
        queue.add_after(request, result.requeue_after, priority)
        series.requeue_after.inc()
    elif result.requeue:
        queue.add_rate_limited(request, priority)
        series.requeue.inc()
    else:
        queue.forget(request)
        series.success.inc()
