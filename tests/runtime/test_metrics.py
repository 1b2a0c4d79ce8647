"""Operator metrics as a Prometheus scraper sees them (the text exposition)."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.queues.metrics_hooks import NOOP_QUEUE_METRICS
from rayop.runtime.queues.priority import PriorityQueue
from rayop.testing.clock import FakeClock


def _text(metrics: OperatorMetrics) -> str:
    return metrics.render().decode()


def _value(metrics: OperatorMetrics, sample: str) -> float:
    """The value of the exposition line that starts with ``sample`` (name{labels})."""
    for line in _text(metrics).splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{sample} not exposed")


def test_controller_series_are_zero_initialised_with_exact_names() -> None:
    metrics = OperatorMetrics()
    metrics.init_controller("raycluster", 5)
    text = _text(metrics)
    for result in ("success", "error", "requeue", "requeue_after"):
        assert (
            f'controller_runtime_reconcile_total{{controller="raycluster",result="{result}"}} 0.0'
            in text
        )
    for counter in (
        "reconcile_errors",
        "terminal_reconcile_errors",
        "reconcile_panics",
        "reconcile_timeouts",
    ):
        assert f'controller_runtime_{counter}_total{{controller="raycluster"}} 0.0' in text
    assert 'controller_runtime_max_concurrent_reconciles{controller="raycluster"} 5.0' in text
    assert 'controller_runtime_active_workers{controller="raycluster"} 0.0' in text
    assert "_created" not in text
    assert "controller_runtime_reconcile_total_total" not in text


def test_metric_types_in_exposition() -> None:
    metrics = OperatorMetrics()
    metrics.init_controller("c", 1)
    metrics.queue_metrics("c", FakeClock())
    metrics.leader_election_master_status.labels(name="rayop-lock").set(1)
    types = {f.name: f.type for f in text_string_to_metric_families(_text(metrics))}
    assert types["controller_runtime_reconcile"] == "counter"
    assert types["controller_runtime_reconcile_time_seconds"] == "histogram"
    assert types["controller_runtime_max_concurrent_reconciles"] == "gauge"
    assert types["workqueue_adds"] == "counter"
    assert types["workqueue_retries"] == "counter"
    assert types["workqueue_queue_duration_seconds"] == "histogram"
    assert types["workqueue_work_duration_seconds"] == "histogram"
    assert types["workqueue_unfinished_work_seconds"] == "gauge"
    assert types["workqueue_longest_running_processor_seconds"] == "gauge"
    assert types["leader_election_master_status"] == "gauge"
    assert 'leader_election_master_status{name="rayop-lock"} 1.0' in _text(metrics)


def test_histogram_buckets() -> None:
    metrics = OperatorMetrics()
    metrics.init_controller("c", 1)
    metrics.queue_metrics("c", FakeClock())
    text = _text(metrics)
    reconcile = re.findall(
        r'controller_runtime_reconcile_time_seconds_bucket\{controller="c",le="([^"]+)"\}', text
    )
    assert [float(b) for b in reconcile[:3]] == [0.005, 0.01, 0.025]
    assert len(reconcile) == 41 and reconcile[-2] == "60.0" and reconcile[-1] == "+Inf"
    work = re.findall(
        r'workqueue_work_duration_seconds_bucket\{controller="c",le="([^"]+)",name="c"\}', text
    )
    assert [float(b) for b in work[:-1]] == [1e-8 * 10**i for i in range(12)]
    assert work[-1] == "+Inf"


def test_registries_are_isolated() -> None:
    one, two = OperatorMetrics(), OperatorMetrics()
    one.init_controller("c", 3)
    assert "controller_runtime_max_concurrent_reconciles{" not in _text(two)


def test_queue_metrics_durations_and_depth() -> None:
    clock = FakeClock()
    metrics = OperatorMetrics()
    qm = metrics.queue_metrics("raycluster", clock)
    labels = 'controller="raycluster",name="raycluster"'
    qm.on_add("a", None)
    qm.on_add("b", None)
    assert _value(metrics, f'workqueue_depth{{{labels},priority=""}}') == 2
    assert _value(metrics, f"workqueue_adds_total{{{labels}}}") == 2
    clock.step(2.0)
    qm.on_get("a", None)
    assert _value(metrics, f'workqueue_depth{{{labels},priority=""}}') == 1
    assert _value(metrics, f"workqueue_queue_duration_seconds_sum{{{labels}}}") == 2.0
    clock.step(3.0)
    qm.update_unfinished_work()
    assert _value(metrics, f"workqueue_unfinished_work_seconds{{{labels}}}") == 3.0
    assert _value(metrics, f"workqueue_longest_running_processor_seconds{{{labels}}}") == 3.0
    qm.on_get("b", None)
    clock.step(1.0)
    qm.update_unfinished_work()
    assert _value(metrics, f"workqueue_unfinished_work_seconds{{{labels}}}") == 5.0
    assert _value(metrics, f"workqueue_longest_running_processor_seconds{{{labels}}}") == 4.0
    qm.on_done("a")
    qm.on_done("b")
    qm.update_unfinished_work()
    assert _value(metrics, f"workqueue_work_duration_seconds_sum{{{labels}}}") == 5.0
    assert _value(metrics, f"workqueue_work_duration_seconds_count{{{labels}}}") == 2
    assert _value(metrics, f"workqueue_unfinished_work_seconds{{{labels}}}") == 0.0
    qm.on_retry()
    assert _value(metrics, f"workqueue_retries_total{{{labels}}}") == 1


def test_queue_duration_starts_at_first_counted_add() -> None:
    clock = FakeClock()
    metrics = OperatorMetrics()
    qm = metrics.queue_metrics("q", clock)
    qm.on_add("a", 0)
    clock.step(1.0)
    qm.on_add("a", 0)  # a re-notification of a still-queued item is not a new add
    clock.step(1.0)
    qm.on_get("a", 0)
    labels = 'controller="q",name="q"'
    assert _value(metrics, f"workqueue_adds_total{{{labels}}}") == 1
    assert _value(metrics, f"workqueue_queue_duration_seconds_sum{{{labels}}}") == 2.0


def test_priority_depth_labels_and_cardinality_limit() -> None:
    metrics = OperatorMetrics()
    qm = metrics.queue_metrics("q", FakeClock())
    for i in range(30):
        qm.on_add(f"item{i}", i - 100)
    text = _text(metrics)
    assert 'workqueue_depth{controller="q",name="q",priority="-100"} 1.0' in text
    assert 'workqueue_depth{controller="q",name="q",priority="-76"} 1.0' in text
    assert 'priority="-75"' not in text
    assert (
        'workqueue_depth{controller="q",name="q",priority="exceeded_cardinality_limit"} 5.0' in text
    )
    qm.on_add("item0", 5)  # priority raised while queued: depth moves to the new label
    qm.on_get("item0", 5)
    text = _text(metrics)
    assert 'workqueue_depth{controller="q",name="q",priority="-100"} 0.0' in text


def test_unnamed_queue_records_nothing() -> None:
    metrics = OperatorMetrics()
    assert metrics.queue_metrics("", FakeClock()) is NOOP_QUEUE_METRICS


def _depth(metrics: OperatorMetrics, priority: str) -> float | None:
    labels = {"name": "q", "controller": "q", "priority": priority}
    return metrics.registry.get_sample_value("workqueue_depth", labels)


async def test_depth_follows_a_raised_priority_in_the_priority_queue() -> None:
    clock = FakeClock()
    metrics = OperatorMetrics()
    queue: PriorityQueue[str] = PriorityQueue(
        name="q", clock=clock, metrics=metrics.queue_metrics("q", clock)
    )
    queue.add("a", priority=-100)  # as from the initial list
    queue.add("a", priority=0)  # then a watch event for the same key
    assert (_depth(metrics, "-100"), _depth(metrics, "0")) == (0, 1)
    assert await queue.get_with_priority() == ("a", 0, False)
    queue.add("a", priority=-100)  # re-added while processing...
    queue.add("a", priority=5)  # ...and raised before done
    assert (_depth(metrics, "-100"), _depth(metrics, "5")) == (0, 1)
    queue.done("a")
    assert await queue.get_with_priority() == ("a", 5, False)
    queue.done("a")
    assert {_depth(metrics, p) for p in ("-100", "0", "5")} == {0}
