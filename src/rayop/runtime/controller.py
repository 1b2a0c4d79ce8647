"""The controller loop: N workers taking requests off a workqueue and reconciling them.

Follows controller-runtime's internal controller (``pkg/internal/controller/controller.go`` in
kubernetes-sigs/controller-runtime): sources feed the queue; once every source reports synced,
exactly ``max_concurrent_reconciles`` workers each loop ``get -> active_workers+1 -> reconcile and
handle the outcome -> active_workers-1 -> done``. The queue guarantees that one request is never
reconciled by two workers at once. With adaptive concurrency (:meth:`Controller.adapt_concurrency`)
as many workers as the ceiling run, and a :class:`~rayop.runtime.concurrency.worker_gate.WorkerGate` lets only
the current limit of them take requests; :mod:`rayop.runtime.concurrency.auto` moves that limit. The
reconcile contract (results, errors, panics, timeouts) is written in
:class:`rayop.runtime.reconcile.Reconciler`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import Hashable, Iterable
from typing import Final, cast

from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.concurrency.auto import WINDOW_SECONDS, AdaptiveConcurrency
from rayop.runtime.concurrency.law import LawSettings
from rayop.runtime.concurrency.worker_gate import WorkerGate
from rayop.runtime.decisions import DecisionLog, PassAccount
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.queues.metrics_hooks import QueueMetrics
from rayop.runtime.queues.priority import PriorityQueue
from rayop.runtime.queues.rate_limiters import RateLimiter, default_controller_rate_limiter
from rayop.runtime.queues.ratelimiting import RateLimitingQueue
from rayop.runtime.reconcile import (
    ReconcileFunc,
    ReconcilePanic,
    Reconciler,
    Request,
    Result,
    RetryAfter,
    TerminalError,
    current_controller,
    current_reconcile_id,
    current_request,
    handle_outcome,
    invoke,
)
from rayop.runtime.source import Enqueue, Source

__all__ = [
    "CacheSyncTimeoutError",
    "Controller",
    "Enqueue",
    "ReconcileFunc",
    "ReconcilePanic",
    "Reconciler",
    "Request",
    "Result",
    "RetryAfter",
    "Source",
    "TerminalError",
    "current_reconcile_id",
]

logger = logging.getLogger("rayop.runtime.controller")

SYNC_POLL_INTERVAL: Final[float] = 0.1
"""Seconds between checks of the sources' ``has_synced``."""

UNFINISHED_WORK_INTERVAL: Final[float] = 0.5
"""Seconds between updates of the unfinished-work gauges."""


class CacheSyncTimeoutError(TimeoutError):
    """The sources did not all report synced within ``cache_sync_timeout``."""


class _ClassicOps:
    """Drives a :class:`RateLimitingQueue`; priorities are ignored."""

    def __init__(self, queue: RateLimitingQueue[Request]) -> None:
        self.queue = queue

    async def get(self) -> tuple[Request, int | None, bool]:
        request, shutdown = await self.queue.get()
        return request, None, shutdown

    def add(self, request: Request, priority: int | None = None) -> None:
        self.queue.add(request)

    def add_rate_limited(self, request: Request, priority: int | None) -> None:
        self.queue.add_rate_limited(request)

    def add_after(self, request: Request, seconds: float, priority: int | None) -> None:
        self.queue.add_after(request, seconds)

    def forget(self, request: Request) -> None:
        self.queue.forget(request)

    async def shut_down(self) -> None:
        # C8: workers keep taking the requests already queued until the queue is empty.
        await self.queue.shut_down_with_drain()


class _PriorityOps:
    """Drives a :class:`PriorityQueue`, keeping each request's priority on requeue."""

    def __init__(self, queue: PriorityQueue[Request]) -> None:
        self.queue = queue

    async def get(self) -> tuple[Request, int | None, bool]:
        return await self.queue.get_with_priority()

    def add(self, request: Request, priority: int | None = None) -> None:
        self.queue.add(request, priority=priority)

    def add_rate_limited(self, request: Request, priority: int | None) -> None:
        self.queue.add(request, rate_limited=True, priority=priority)

    def add_after(self, request: Request, seconds: float, priority: int | None) -> None:
        self.queue.add(request, after=seconds, priority=priority)

    def forget(self, request: Request) -> None:
        self.queue.forget(request)

    async def shut_down(self) -> None:
        # C8/P5: the priority queue stops handing out items at once.
        self.queue.shut_down()


class Controller:
    """Runs ``reconcile`` for the requests its sources produce, on exactly N workers.

    Args:
        name: The controller name: the ``controller`` label and the queue's name.
        reconcile: ``async def reconcile(request) -> Result``; see
            :class:`rayop.runtime.reconcile.Reconciler`.
        sources: Where requests come from; workers start once all have synced.
        max_concurrent_reconciles: The number of workers N (values below 1 mean 1).
        use_priority_queue: Use the priority queue (the default, as controller-runtime ≥ v0.23)
            rather than the classic rate-limiting queue.
        rate_limiter: The requeue rate limiter; default: ``default_controller_rate_limiter``.
        recover_panic: Turn panics into errors instead of crashing the controller.
        reconciliation_timeout: Seconds after which a reconcile is cancelled; None for no limit.
        metrics: Where series are recorded; default: a private :class:`OperatorMetrics`.
        clock: Time source for delays, timeouts and durations.
        cache_sync_timeout: Seconds :meth:`start` waits for the sources to sync.
        decisions: Where each pass's account is kept (:mod:`rayop.runtime.decisions`); None
            keeps none.
        kind: The kind of the objects the requests name, for the accounts.
    """

    def __init__(
        self,
        name: str,
        reconcile: ReconcileFunc,
        *,
        sources: Iterable[Source] = (),
        max_concurrent_reconciles: int = 1,
        use_priority_queue: bool = True,
        rate_limiter: RateLimiter[Hashable] | None = None,
        recover_panic: bool = True,
        reconciliation_timeout: float | None = None,
        metrics: OperatorMetrics | None = None,
        clock: Clock = MONOTONIC,
        cache_sync_timeout: float = 120.0,
        decisions: DecisionLog | None = None,
        kind: str = "",
    ) -> None:
        if not name:
            raise ValueError("a controller needs a name")
        self.name = name
        self._reconcile = reconcile
        self._sources = tuple(sources)
        self._worker_count = max(1, max_concurrent_reconciles)
        self._gate = WorkerGate(self._worker_count, clock)
        self.adaptive: AdaptiveConcurrency | None = None
        self._idle: dict[asyncio.Task[None], None] = {}
        """Workers holding a permit while they wait for a request, oldest first."""
        self._revoked: set[asyncio.Task[None]] = set()
        self._recover_panic = recover_panic
        self._timeout = reconciliation_timeout if reconciliation_timeout else None
        self._clock = clock
        self._cache_sync_timeout = cache_sync_timeout
        self.decisions = decisions
        self.kind = kind
        self.metrics = metrics if metrics is not None else OperatorMetrics()
        self._series = self.metrics.controller_series(name)
        self._queue_metrics = cast(QueueMetrics[Request], self.metrics.queue_metrics(name, clock))
        limiter = rate_limiter or default_controller_rate_limiter(use_priority_queue, clock=clock)
        self.queue: PriorityQueue[Request] | RateLimitingQueue[Request]
        self._ops: _PriorityOps | _ClassicOps
        if use_priority_queue:
            self.queue = PriorityQueue(
                name=name, rate_limiter=limiter, clock=clock, metrics=self._queue_metrics
            )
            self._ops = _PriorityOps(self.queue)
        else:
            self.queue = RateLimitingQueue(
                name=name, rate_limiter=limiter, clock=clock, metrics=self._queue_metrics
            )
            self._ops = _ClassicOps(self.queue)
        self._started = False
        self._stopping = False
        self._running = asyncio.Event()
        self._passes_running = 0
        self._pass_began = asyncio.Event()
        """Set when a pass starts: wakes the unfinished-work ticker of an idle controller."""
        self._supervisor: asyncio.Task[None] | None = None
        self._workers: list[asyncio.Task[None]] = []

    @property
    def max_concurrent_reconciles(self) -> int:
        """How many workers may reconcile at once now (fixed, or the adaptive limit)."""
        return self._gate.limit

    def adapt_concurrency(
        self,
        settings: LawSettings,
        *,
        rest: RestClientMetrics | None = None,
        interval: float = WINDOW_SECONDS,
    ) -> AdaptiveConcurrency:
        """Makes the worker count adaptive, between ``settings.floor`` and ``settings.ceiling``.

        Call it before :meth:`start`. The controller then starts ``ceiling`` workers, lets
        ``floor`` of them reconcile, and moves that limit every ``interval`` seconds as
        :class:`~rayop.runtime.concurrency.law.GradientAimd` decides from this controller's
        metrics and ``rest`` (the API client's). Never blocks.

        Raises:
            RuntimeError: The controller was already started.
        """
        if self._started:
            raise RuntimeError(f"controller {self.name!r} is running: its concurrency is fixed")
        self._worker_count = settings.ceiling
        self._gate = WorkerGate(settings.floor, self._clock)
        self.adaptive = AdaptiveConcurrency(
            self.name,
            self._gate,
            self._set_limit,
            lambda: float(len(self.queue)),
            self.metrics,
            rest,
            settings,
            self._clock,
            interval,
        )
        return self.adaptive

    def _set_limit(self, limit: int) -> None:
        """Moves the worker limit; surplus workers that wait for a request give their permit back.

        Waiting in the queue's ``get`` is cancellation-safe (a cancelled waiter takes no item
        and passes its wake-up on), so a revoked idle worker takes nothing; a reconciling worker
        is never interrupted and gives its permit back when it finishes.
        """
        self._gate.set_limit(limit)
        surplus = self._gate.held - self._gate.limit
        for task in list(self._idle)[: max(0, surplus)]:
            del self._idle[task]
            self._revoked.add(task)
            task.cancel()

    def enqueue(self, request: Request, priority: int | None = None) -> None:
        """Queues ``request`` for reconciliation (the callback given to sources); never blocks."""
        self._ops.add(request, priority)

    async def start(self) -> None:
        """Starts the sources, waits for them to sync, then starts the workers.

        Blocks until the workers run (or until :meth:`stop` is called meanwhile).

        Raises:
            RuntimeError: The controller was already started or stopped.
            CacheSyncTimeoutError: The sources did not sync within ``cache_sync_timeout``.
        """
        if self._started or self._stopping:
            raise RuntimeError(f"controller {self.name!r} was already started")
        self._started = True
        self.metrics.init_controller(self.name, self.max_concurrent_reconciles)
        if self.adaptive is not None:
            logger.info(
                "controller %s: adaptive reconcile concurrency between %d and %d, starting at %d",
                self.name,
                self.adaptive.law.settings.floor,
                self.adaptive.law.settings.ceiling,
                self.max_concurrent_reconciles,
            )
        try:
            await self._start_sources()
            logger.info("Starting Controller", extra={"controller": self.name})
            synced = await self._wait_for_sync()
        except BaseException:
            self._stopping = True
            self.queue.shut_down()
            raise
        if not synced:
            return
        # controller-runtime's line once the caches synced: tools (and the side-by-side
        # benchmark) read it as "this controller now reconciles".
        logger.info(
            "Starting workers",
            extra={"controller": self.name, "worker count": self.max_concurrent_reconciles},
        )
        self._supervisor = asyncio.get_running_loop().create_task(
            self._run_workers(), name=f"controller:{self.name}"
        )
        await self._running.wait()

    async def stop(self, *, graceful: bool = True) -> None:
        """Shuts the queue down and blocks until every worker has exited.

        Gracefully, with the classic queue the workers first reconcile every request already
        queued; with the priority queue they stop after their current reconcile. Not
        gracefully, it is :meth:`abort` and then :meth:`wait`.

        Raises:
            ExceptionGroup: A worker crashed (an unrecovered :class:`ReconcilePanic`).
        """
        self._stopping = True
        if graceful:
            await self._ops.shut_down()
        else:
            self.abort()
        await self.wait()

    def abort(self) -> None:
        """Stops reconciling at once, for a lost leadership; never blocks.

        No request is handed out any more, whichever the queue, and every running reconcile is
        cancelled. Await :meth:`wait` for the workers to exit.
        """
        self._stopping = True
        self.queue.shut_down()
        for worker in self._workers:
            worker.cancel()

    async def wait(self) -> None:
        """Blocks until the workers have exited (after :meth:`stop` or a crash).

        Raises:
            ExceptionGroup: A worker crashed (an unrecovered :class:`ReconcilePanic`).
        """
        if self._supervisor is not None:
            await asyncio.shield(self._supervisor)

    async def _start_sources(self) -> None:
        pending = [source.start(self.enqueue) for source in self._sources]
        awaitables = [p for p in pending if p is not None and inspect.isawaitable(p)]
        if awaitables:
            await asyncio.gather(*awaitables)

    async def _wait_for_sync(self) -> bool:
        deadline = self._clock.now() + self._cache_sync_timeout
        while not all(source.has_synced() for source in self._sources):
            if self._stopping:
                return False
            if self._clock.now() >= deadline:
                raise CacheSyncTimeoutError(
                    f"timed out waiting for cache to be synced for controller {self.name!r}"
                )
            await self._clock.sleep(SYNC_POLL_INTERVAL)
        return not self._stopping

    async def _run_workers(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._workers = [
                    group.create_task(self._worker(), name=f"controller:{self.name}:worker-{i}")
                    for i in range(self._worker_count)
                ]
                ticker = group.create_task(self._update_unfinished_work())
                adapting = (
                    group.create_task(self.adaptive.run(), name=f"controller:{self.name}:adaptive")
                    if self.adaptive is not None
                    else None
                )
                self._running.set()
                await asyncio.wait(self._workers)
                ticker.cancel()
                if adapting is not None:
                    adapting.cancel()
        except Exception:
            logger.exception("controller %s crashed", self.name)
            raise
        finally:
            self._running.set()
            self.queue.shut_down()

    async def _worker(self) -> None:
        ops, series, gate = self._ops, self._series, self._gate
        me = cast(asyncio.Task[None], asyncio.current_task())
        while await gate.acquire():
            try:
                self._idle[me] = None
                try:
                    request, priority, shutdown = await ops.get()
                except asyncio.CancelledError:
                    if me not in self._revoked or self._stopping:
                        raise
                    self._revoked.discard(me)
                    me.uncancel()
                    continue  # the permit was revoked by a lowered limit
                finally:
                    self._idle.pop(me, None)
                if shutdown:
                    gate.close()  # the workers waiting for a permit exit too
                    return
                series.active_workers.inc()
                gate.started()
                self._passes_running += 1
                self._pass_began.set()
                try:
                    await self._reconcile_handler(request, priority)
                finally:
                    self._passes_running -= 1
                    gate.finished()
                    series.active_workers.dec()
                    self.queue.done(request)
            finally:
                gate.release()
            # A queued item is taken, and a pass that reads only caches runs, without
            # suspending: without this yield one worker would run a whole queue of such passes
            # while nothing else (watches, /metrics, probes, the lease renewal) ran.
            await asyncio.sleep(0)

    async def _reconcile_handler(self, request: Request, priority: int | None) -> None:
        started = self._clock.now()
        token = current_reconcile_id.set(str(uuid.uuid4()))
        controller_token = current_controller.set(self.name)
        request_token = current_request.set(request)
        decisions, account = self.decisions, None
        if decisions is not None:
            account = PassAccount(self.name, self.kind, request.namespace, request.name, started)
            account_token = decisions.open(account)
        try:
            result, error = await invoke(
                self._reconcile,
                request,
                timeout=self._timeout,
                clock=self._clock,
                series=self._series,
                recover_panic=self._recover_panic,
            )
            handle_outcome(self._ops, request, priority, result, error, self._series)
            if account is not None:
                account.settle(result, error, self._clock.now() - started)
                if account.outcome in ("error", "requeue"):
                    account.retries = self.queue.num_requeues(request)
        finally:
            if decisions is not None and account is not None:
                decisions.close(account, account_token)
            current_request.reset(request_token)
            current_controller.reset(controller_token)
            current_reconcile_id.reset(token)
        self._series.reconcile_time.observe(max(0.0, self._clock.now() - started))

    async def _update_unfinished_work(self) -> None:
        """Updates the unfinished-work gauges every :data:`UNFINISHED_WORK_INTERVAL` while a
        pass runs, as controller-runtime's queue does every 500 ms. With no pass running they
        read 0 until one starts, so an idle controller waits for a pass instead of waking
        twice a second (an idle operator's largest CPU cost)."""
        while True:
            await self._clock.sleep(UNFINISHED_WORK_INTERVAL)
            self._queue_metrics.update_unfinished_work()
            if not self._passes_running:
                self._pass_began.clear()
                await self._pass_began.wait()
