"""Runs a controller's adaptive concurrency: every few seconds, its metrics into the law.

Each window reads the controller's own series (reconciles, errors, the workqueue wait of the
items handed out, the queue depth, the gate's all-busy time) and the REST client's (request
latency, token-bucket waits), turns the differences into a
:class:`~rayop.runtime.concurrency.law.Window`, and applies the
:class:`~rayop.runtime.concurrency.law.GradientAimd` decision: the gate's limit and
``controller_runtime_max_concurrent_reconciles`` follow it, and every change is logged with its
reason. While the law is in slow start the windows are shorter (1 s), so a burst that is over
in seconds still meets the workers it needs; the first decrease returns them to 2 s. In slow
start the driver also looks every 0.25 s and closes the window early once the law says it would
double the limit (:meth:`~rayop.runtime.concurrency.law.GradientAimd.ready_to_double`: every
worker finished a reconcile at this limit, all were busy and the queue backed up), so the
doubling follows the reconciles, as TCP's slow start follows the round trips. The latency since
the look before is the window's latest (``Window.latest_latency_mean``): the law doubles only
while it too is calm, so an API server that has just slowed stops a doubling that the
window's mean alone would allow. A slow-start window
restarts, once, at the look that finds work queued at a controller that was idle at the look
before (nothing queued, no worker reconciling): its idle part holds nothing for the law to judge,
and would otherwise keep the first doubling of a burst from qualifying until the window's end.
Once per window, so a load that comes and goes at every look still closes every window within
two intervals. After a decrease on latency the driver looks every 0.25 s too, and closes the
window once the law has the reconciles it needs to judge whether fewer workers brought the
latency down and finds they did not
(:meth:`~rayop.runtime.concurrency.law.GradientAimd.ready_to_rebase`): the new base is taken
then, not at the end of the cooldown.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from prometheus_client.metrics import MetricWrapperBase

from rayop.kube.metrics import RestClientMetrics, RestTotals
from rayop.runtime.clock import Clock
from rayop.runtime.concurrency.law import Decision, GradientAimd, LawSettings, Window
from rayop.runtime.concurrency.worker_gate import WorkerGate
from rayop.runtime.metrics import OperatorMetrics

logger = logging.getLogger("rayop.runtime.concurrency")

WINDOW_SECONDS: Final[float] = 2.0
"""Seconds between two decisions."""
SLOW_START_WINDOW_SECONDS: Final[float] = 1.0
"""Seconds between two decisions while the law is in slow start."""
SLOW_START_TICK_SECONDS: Final[float] = 0.25
"""Seconds between two looks at a slow-start window that may close early."""
DECISIONS_KEPT: Final[int] = 1000
"""How many of the latest limit changes :attr:`AdaptiveConcurrency.decisions` keeps."""


@dataclass(frozen=True, slots=True)
class Totals:
    """Cumulative figures at one instant; two of them make a window."""

    t: float
    busy_seconds: float
    queue_wait_sum: float
    queue_wait_count: float
    requests: float
    request_seconds: float
    throttle_seconds: float
    throttle_count: float
    reconciles: float
    errors: float


def _sums(metric: MetricWrapperBase, suffixes: tuple[str, ...], **labels: str) -> list[float]:
    """Sums, in one pass over the metric's samples, those ending in each suffix (and matching
    ``labels``); a histogram's buckets are generated once, not once per figure."""
    totals = [0.0] * len(suffixes)
    for family in metric.collect():
        for sample in family.samples:
            if any(sample.labels.get(k) != v for k, v in labels.items()):
                continue
            for i, suffix in enumerate(suffixes):
                if sample.name.endswith(suffix):
                    totals[i] += sample.value
    return totals


def _api_latency(before: Totals, after: Totals) -> float | None:
    """Mean request latency minus the token-bucket wait between two readings (None: no request)."""
    requests = after.requests - before.requests
    if not requests:
        return None
    request_seconds = after.request_seconds - before.request_seconds
    throttled = after.throttle_seconds - before.throttle_seconds
    return max(0.0, request_seconds - throttled) / requests


def window(before: Totals, after: Totals, queue_depth: float, look: Totals | None = None) -> Window:
    """Returns what happened between two readings; ``look`` is the reading at the latest look
    into the window before ``after``, whose latency since is the window's latest."""
    seconds = max(after.t - before.t, 1e-9)
    waits = after.queue_wait_count - before.queue_wait_count
    requests = after.requests - before.requests
    throttled = after.throttle_seconds - before.throttle_seconds
    limited = after.throttle_count > 0
    latest = _api_latency(look, after) if look is not None and look.t > before.t else None
    return Window(
        seconds=seconds,
        busy_fraction=min(1.0, (after.busy_seconds - before.busy_seconds) / seconds),
        queue_depth=queue_depth,
        queue_wait_mean=(after.queue_wait_sum - before.queue_wait_sum) / waits if waits else None,
        api_latency_mean=_api_latency(before, after),
        throttle_wait_mean=throttled / requests if requests and limited else None,
        reconciles=round(after.reconciles - before.reconciles),
        errors=round(after.errors - before.errors),
        latest_latency_mean=latest,
    )


class AdaptiveConcurrency:
    """Adjusts one controller's worker limit from its metrics, one window at a time.

    Args:
        name: The controller's name (its metric labels).
        gate: The controller's worker gate (its all-busy time and current limit).
        apply: Sets the controller's limit (the gate's, revoking surplus idle workers).
        queue_depth: Returns how many requests wait in the controller's queue.
        metrics: The operator's metrics (the controller's and workqueue series).
        rest: The API client's REST metrics; None when the client records none (the law then
            sees no API latency and no throttling).
        settings: The law's bounds and thresholds.
        clock: Time source of the windows.
        interval: Seconds per window.
        slow_start_interval: Seconds per window while the law is in slow start.
    """

    def __init__(
        self,
        name: str,
        gate: WorkerGate,
        apply: Callable[[int], None],
        queue_depth: Callable[[], float],
        metrics: OperatorMetrics,
        rest: RestClientMetrics | None,
        settings: LawSettings,
        clock: Clock,
        interval: float = WINDOW_SECONDS,
        slow_start_interval: float = SLOW_START_WINDOW_SECONDS,
    ) -> None:
        self.name = name
        self.gate = gate
        self._apply = apply
        self.law = GradientAimd(settings, start=gate.limit)
        self._queue_depth = queue_depth
        self._metrics = metrics
        self._rest = rest
        self._clock = clock
        self._interval = interval
        self._slow_start_interval = min(interval, slow_start_interval)
        self.decisions: deque[tuple[float, Decision]] = deque(maxlen=DECISIONS_KEPT)
        """The latest changes: (clock time, decision)."""

    def read(self) -> Totals:
        """Returns the cumulative figures now; never blocks."""
        m, name = self._metrics, self.name
        wait = m.workqueue_queue_duration_seconds.labels(name=name, controller=name)
        wait_sum, wait_count = _sums(wait, ("_sum", "_count"))
        rest = self._rest
        totals = rest.totals if rest is not None else RestTotals()
        (reconciles,) = _sums(m.reconcile_total, ("_total",), controller=name)
        (errors,) = _sums(m.reconcile_errors_total, ("_total",), controller=name)
        return Totals(
            t=self._clock.now(),
            busy_seconds=self.gate.busy_seconds(),
            queue_wait_sum=wait_sum,
            queue_wait_count=wait_count,
            requests=totals.requests,
            request_seconds=totals.request_seconds,
            throttle_seconds=totals.throttle_seconds,
            throttle_count=totals.throttle_waits,
            reconciles=reconciles,
            errors=errors,
        )

    async def step(self, before: Totals, look: Totals | None = None) -> Totals:
        """Closes the window begun at ``before`` (last looked into at ``look``), applies the
        decision; returns the new start."""
        after = self.read()
        decision = self.law.update(window(before, after, self._queue_depth(), look))
        if decision.changed:
            self._apply(decision.limit)
            self._metrics.max_concurrent_reconciles.labels(controller=self.name).set(decision.limit)
            self.decisions.append((after.t, decision))
            logger.info(
                "controller %s: reconcile concurrency %d -> %d: %s",
                self.name,
                decision.previous,
                decision.limit,
                decision.reason,
            )
        if decision.note is not None:
            logger.info("controller %s: reconcile concurrency %d: %s", self.name,
                        decision.limit, decision.note)  # fmt: skip
        return after

    @property
    def interval(self) -> float:
        """Seconds until the next decision (shorter while the law is in slow start)."""
        return self._slow_start_interval if self.law.slow_start else self._interval

    def due(self, before: Totals, now: Totals, look: Totals | None = None) -> bool:
        """Whether the window begun at ``before`` should be decided at the reading ``now`` (the
        look before it at ``look``); pure.

        After :attr:`interval` seconds, always; sooner in slow start when the law would double
        the limit on what the window has measured so far, and sooner after a decrease on
        latency when the law would take the latency since as its new base.
        """
        if now.t - before.t >= self.interval - 1e-9:
            return True
        w = window(before, now, self._queue_depth(), look)
        return self.law.ready_to_double(w) or self.law.ready_to_rebase(w)

    @property
    def looking(self) -> bool:
        """Whether the driver looks every tick rather than once per window: in slow start and
        while a decrease on latency awaits its judgement."""
        return self.law.slow_start or self.law.rebase_pending

    def idle(self) -> bool:
        """Whether nothing waits in the queue and no worker is reconciling; never blocks."""
        return self._queue_depth() <= 0 and self.gate.active == 0

    def arrived(self, was_idle: bool) -> bool:
        """Whether a slow-start window should restart now: work is queued at a controller that
        was idle at the last look (``was_idle``); never blocks."""
        return was_idle and self.law.slow_start and self._queue_depth() > 0

    async def run(self) -> None:
        """Decides every :attr:`interval` seconds (sooner in slow start, see :meth:`due`) until
        cancelled."""
        before = self.read()
        look: Totals | None = None  # the reading at the latest look into the window
        was_idle, restarted = self.idle(), False
        while True:
            if self.looking:
                await self._clock.sleep(min(SLOW_START_TICK_SECONDS, self.interval))
                if not restarted and self.arrived(was_idle):
                    before, look, restarted = self.read(), None, True  # the idle part is not judged
                was_idle = self.idle()
                now = self.read()
                if not self.due(before, now, look):
                    look = now
                    continue
            else:
                await self._clock.sleep(self.interval)
            before = await self.step(before, look)
            look, was_idle, restarted = None, self.idle(), False
