"""The operator's Prometheus metrics: controller-runtime, workqueue, leader election, process.

One :class:`OperatorMetrics` owns one ``CollectorRegistry``, so every operator instance (and every
test) has its own isolated set of series. Names, types, labels and buckets are those of
controller-runtime v0.24 (``pkg/internal/controller/metrics/metrics.go``,
``pkg/metrics/workqueue.go`` and ``pkg/metrics/leaderelection.go`` in
kubernetes-sigs/controller-runtime). prometheus_client appends ``_total`` to counter names itself,
so counters are declared without it.

Workqueue metrics are computed by :class:`QueueMetricsRecorder`, which a queue drives through
the :class:`~rayop.runtime.queues.metrics_hooks.QueueMetrics` hooks.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric

from rayop.runtime.clock import Clock
from rayop.runtime.queues.metrics_hooks import NOOP_QUEUE_METRICS, QueueMetrics

_C = TypeVar("_C", Counter, Gauge, Histogram)

RECONCILE_TIME_BUCKETS: Final[tuple[float, ...]] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, float("inf"),
)  # fmt: skip
"""controller_runtime_reconcile_time_seconds buckets (+Inf included)."""

WORKQUEUE_DURATION_BUCKETS: Final[tuple[float, ...]] = (
    *(1e-8 * 10**i for i in range(12)),
    float("inf"),
)
"""ExponentialBuckets(1e-8, 10, 12): 1e-8 ... 1e3, then +Inf."""

RECONCILE_RESULTS: Final[tuple[str, ...]] = ("success", "error", "requeue", "requeue_after")
"""The values of the ``result`` label of controller_runtime_reconcile_total."""

PRIORITY_CARDINALITY_LIMIT: Final[int] = 25
"""Distinct priority label values workqueue_depth keeps before folding the rest together."""

EXCEEDED_CARDINALITY_LABEL: Final[str] = "exceeded_cardinality_limit"


class OperatorMetrics:
    """Creates every operator metric in one registry (a fresh one unless ``registry`` is given).

    Attributes are the prometheus_client collectors, named after the exported series without
    their ``controller_runtime_`` / ``workqueue_`` prefix where that is unambiguous.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry: CollectorRegistry = registry if registry is not None else CollectorRegistry()
        reg = self.registry

        def per_controller(kind: type[_C], name: str, text: str, **options: Any) -> _C:
            return kind(f"controller_runtime_{name}", text, ["controller"], registry=reg, **options)

        self.reconcile_total = Counter(
            "controller_runtime_reconcile", "Total number of reconciliations per controller",
            ["controller", "result"], registry=reg,
        )  # fmt: skip
        self.reconcile_errors_total = per_controller(
            Counter, "reconcile_errors", "Total number of reconciliation errors per controller"
        )
        self.terminal_reconcile_errors_total = per_controller(
            Counter,
            "terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
        )
        self.reconcile_panics_total = per_controller(
            Counter, "reconcile_panics", "Total number of reconciliation panics per controller"
        )
        self.reconcile_timeouts_total = per_controller(
            Counter, "reconcile_timeouts", "Total number of reconciliation timeouts per controller"
        )
        self.reconcile_time_seconds = per_controller(
            Histogram,
            "reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            buckets=RECONCILE_TIME_BUCKETS,
        )
        self.max_concurrent_reconciles = per_controller(
            Gauge,
            "max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
        )
        self.active_workers = per_controller(
            Gauge, "active_workers", "Number of currently used workers per controller"
        )
        self._init_workqueue_collectors(reg)
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"], registry=reg,
        )  # fmt: skip
        # process_* (resident memory, CPU, open fds...) and python_info, always, as
        # controller-runtime registers its process and Go collectors.
        ProcessCollector(registry=reg)
        PlatformCollector(registry=reg)

    def _init_workqueue_collectors(self, reg: CollectorRegistry) -> None:
        q = ["name", "controller"]
        self.workqueue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue by workqueue and priority",
            ["name", "controller", "priority"], registry=reg,
        )  # fmt: skip
        self.workqueue_adds_total = Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", q, registry=reg
        )
        self.workqueue_queue_duration_seconds = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            q, buckets=WORKQUEUE_DURATION_BUCKETS, registry=reg,
        )  # fmt: skip
        self.workqueue_work_duration_seconds = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            q, buckets=WORKQUEUE_DURATION_BUCKETS, registry=reg,
        )  # fmt: skip
        self.workqueue_unfinished_work_seconds = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            q, registry=reg,
        )  # fmt: skip
        self.workqueue_longest_running_processor_seconds = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            q, registry=reg,
        )  # fmt: skip
        self.workqueue_retries_total = Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", q, registry=reg
        )

    def init_controller(self, name: str, max_concurrent: int) -> None:
        """Creates a controller's series at their start values, as controller-runtime's Start does.

        Every counter (all four ``result`` values included) is set to 0, max_concurrent_reconciles
        to ``max_concurrent`` and active_workers to 0. Never blocks.
        """
        for result in RECONCILE_RESULTS:
            self.reconcile_total.labels(controller=name, result=result)
        for counter in (
            self.reconcile_errors_total,
            self.terminal_reconcile_errors_total,
            self.reconcile_panics_total,
            self.reconcile_timeouts_total,
        ):
            counter.labels(controller=name)
        self.reconcile_time_seconds.labels(controller=name)
        self.max_concurrent_reconciles.labels(controller=name).set(max_concurrent)
        self.active_workers.labels(controller=name).set(0)

    def controller_series(self, name: str) -> ControllerSeries:
        """Returns the controller_runtime_* series of controller ``name``, bound to their labels."""
        total = self.reconcile_total
        return ControllerSeries(
            success=total.labels(controller=name, result="success"),
            error=total.labels(controller=name, result="error"),
            requeue=total.labels(controller=name, result="requeue"),
            requeue_after=total.labels(controller=name, result="requeue_after"),
            errors=self.reconcile_errors_total.labels(controller=name),
            terminal_errors=self.terminal_reconcile_errors_total.labels(controller=name),
            panics=self.reconcile_panics_total.labels(controller=name),
            timeouts=self.reconcile_timeouts_total.labels(controller=name),
            reconcile_time=self.reconcile_time_seconds.labels(controller=name),
            active_workers=self.active_workers.labels(controller=name),
        )

    def queue_metrics(self, name: str, clock: Clock) -> QueueMetrics[Hashable]:
        """Returns the hooks a queue named ``name`` calls to feed the workqueue_* series.

        Both the ``name`` and ``controller`` labels carry ``name`` (controller-runtime ≥ v0.19).
        An unnamed queue emits nothing (the no-op hooks are returned). Never blocks.
        """
        if not name:
            return NOOP_QUEUE_METRICS
        return QueueMetricsRecorder(self, name, clock)

    def render(self) -> bytes:
        """Returns the Prometheus text exposition of every series in the registry.

        The ``*_created`` samples prometheus_client adds to counters and histograms are left
        out, as controller-runtime exports none.
        """
        return generate_latest(_WithoutCreated(self.registry))


@dataclass(frozen=True, slots=True)
class ControllerSeries:
    """One controller's controller_runtime_* series, already bound to its ``controller`` label."""

    success: Counter
    error: Counter
    requeue: Counter
    requeue_after: Counter
    errors: Counter
    terminal_errors: Counter
    panics: Counter
    timeouts: Counter
    reconcile_time: Histogram
    active_workers: Gauge


class _WithoutCreated:
    """A read-only view of a registry that drops ``*_created`` samples."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for family in self._registry.collect():
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield family


class QueueMetricsRecorder:
    """Computes workqueue_* series for one named queue from the queue's hooks; never blocks.

    Queue duration runs from an item's first counted add to its get; work duration from get to
    done; unfinished work is the sum and maximum, over items being processed, of time since
    their get. ``workqueue_depth`` is kept per priority label: ``""`` for the classic queue
    (priority None), ``str(priority)`` for the priority queue, folded into
    ``exceeded_cardinality_limit`` once 25 distinct values have been seen.
    """

    def __init__(self, metrics: OperatorMetrics, name: str, clock: Clock) -> None:
        self._metrics = metrics
        self._name = name
        self._clock = clock
        self._add_times: dict[Hashable, float] = {}
        self._depth_labels: dict[Hashable, str] = {}
        self._processing_since: dict[Hashable, float] = {}
        self._priority_labels: set[str] = set()
        self._depth_children: dict[str, Gauge] = {}
        labels = {"name": name, "controller": name}
        self._adds = metrics.workqueue_adds_total.labels(**labels)
        self._retries = metrics.workqueue_retries_total.labels(**labels)
        self._queue_duration = metrics.workqueue_queue_duration_seconds.labels(**labels)
        self._work_duration = metrics.workqueue_work_duration_seconds.labels(**labels)
        self._unfinished = metrics.workqueue_unfinished_work_seconds.labels(**labels)
        self._longest = metrics.workqueue_longest_running_processor_seconds.labels(**labels)
        self._unfinished.set(0)
        self._longest.set(0)

    def _depth(self, label: str) -> Gauge:
        """The depth gauge of one priority label (its child kept: every add and get moves it)."""
        child = self._depth_children.get(label)
        if child is None:
            child = self._metrics.workqueue_depth.labels(
                name=self._name, controller=self._name, priority=label
            )
            self._depth_children[label] = child
        return child

    def _priority_label(self, priority: int | None) -> str:
        if priority is None:
            return ""
        label = str(priority)
        if label in self._priority_labels:
            return label
        if len(self._priority_labels) >= PRIORITY_CARDINALITY_LIMIT:
            return EXCEEDED_CARDINALITY_LABEL
        self._priority_labels.add(label)
        return label

    def on_add(self, item: Hashable, priority: int | None) -> None:
        label = self._priority_label(priority)
        if item in self._depth_labels:
            # Already counted and not yet handed out: at most its priority changed.
            self._move_depth(item, label)
            return
        self._adds.inc()
        self._depth(label).inc()
        self._depth_labels[item] = label
        self._add_times.setdefault(item, self._clock.now())

    def on_priority_change(self, item: Hashable, old: int, new: int) -> None:
        if item in self._depth_labels:
            self._move_depth(item, self._priority_label(new))

    def _move_depth(self, item: Hashable, label: str) -> None:
        old = self._depth_labels[item]
        if old != label:
            self._depth(old).dec()
            self._depth(label).inc()
            self._depth_labels[item] = label

    def on_get(self, item: Hashable, priority: int | None) -> None:
        now = self._clock.now()
        label = self._depth_labels.pop(item, None)
        self._depth(label if label is not None else self._priority_label(priority)).dec()
        added = self._add_times.pop(item, None)
        if added is not None:
            self._queue_duration.observe(max(0.0, now - added))
        self._processing_since[item] = now

    def on_done(self, item: Hashable) -> None:
        started = self._processing_since.pop(item, None)
        if started is not None:
            self._work_duration.observe(max(0.0, self._clock.now() - started))

    def on_retry(self) -> None:
        self._retries.inc()

    def update_unfinished_work(self) -> None:
        now = self._clock.now()
        ages = [now - start for start in self._processing_since.values()]
        self._unfinished.set(sum(ages))
        self._longest.set(max(ages, default=0.0))
