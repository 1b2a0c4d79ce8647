"""The series cache's own rules: what makes two Events one series, and what a kept Event costs."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from rayop.runtime.events.series import FINISH_TIME, GENERATION, SeriesCache, event_key


def _event(
    name: str, *, pod: str = "p", note: str = "n", reason: str = "CreatedWorkerPod"
) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "ns"},
        "eventTime": "2026-12-05T10:00:00.000000Z",
        "reportingController": "raycluster-controller",
        "reportingInstance": "raycluster-controller-host",
        "action": "Create",
        "reason": reason,
        "note": note,
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": pod, "namespace": "ns",
                      "uid": "u-" + pod, "resourceVersion": "12"},
    }  # fmt: skip


def test_the_note_and_the_order_of_a_reference_do_not_make_another_series() -> None:
    first = _event("a.1", note="Created worker Pod ns/p")
    again = _event("a.2", note="another note")
    again["regarding"] = dict(reversed(list(again["regarding"].items())))
    assert event_key(first) == event_key(again)
    assert len(event_key(first)) == 16
    assert event_key(first) != event_key(_event("a.3", pod="q"))
    assert event_key(first) != event_key(_event("a.4", reason="DeletedWorkerPod"))
    assert event_key(first) != event_key({**_event("a.5"), "related": {"kind": "Pod"}})


def test_a_series_patch_carries_the_whole_event_as_first_created() -> None:
    cache = SeriesCache()
    created = cache.observe(_event("a.1", note="first"), 0.0, "t0")
    assert created is not None and created.verb == "create"
    patch = cache.observe(_event("a.2", note="second"), 1.0, "t1")
    assert patch is not None and patch.verb == "patch" and patch.name == "a.1"
    assert patch.body == {"series": {"count": 2, "lastObservedTime": "t1"}}
    assert patch.whole() == {**_event("a.1", note="first"), "series": patch.body["series"]}
    assert patch.packed is created.packed  # the write shares the cache's packed text
    assert created.body == _event("a.1", note="first")
    assert cache.observe(_event("a.3"), 2.0, "t2") is None
    assert [w.body for w in cache.refresh()] == [{"series": {"count": 3, "lastObservedTime": "t2"}}]
    assert [w.body for w in cache.finish(2.0 + FINISH_TIME + 1)] == [
        {"series": {"count": 3, "lastObservedTime": "t2"}}
    ]
    assert len(cache) == 0


def test_an_event_unlike_the_first_comes_back_whole() -> None:
    cache = SeriesCache()
    first = _event("a.1")
    other = {**_event("b.1", pod="ü-" * 40, note="x" * 1024), "related": {"kind": "Node"}}
    assert cache.observe(first, 0.0, "t0") is not None
    write = cache.observe(other, 0.0, "t0")
    assert write is not None and write.body == other and write.name == "b.1"


def test_a_kept_event_costs_under_260_bytes() -> None:
    """A replica keeps tens of thousands of Events (6 to 7.5 minutes' worth): each must be small
    (kept as dicts and tuples, this one cost 1.8 KB; as JSON text and a digest, 0.8 KB; packed
    with a record object and a float, about 0.3 KB; packed by generation, about 0.23 KB)."""
    cache = SeriesCache()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(2000):
        cache.observe(_event(f"p{i}.{i:x}", pod=f"p{i}"), float(i), "t")
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(cache) == 2000
    assert kept / 2000 < 260, kept / 2000


def test_single_events_are_forgotten_a_generation_at_a_time_never_early() -> None:
    cache = SeriesCache(finish_time=FINISH_TIME)
    for name, at in (("a", 0.0), ("b", GENERATION - 10), ("c", GENERATION + 10)):
        assert cache.observe(_event(f"{name}.1", pod=name), at, "t") is not None
    assert cache.finish(GENERATION - 10 + FINISH_TIME) == [] and len(cache) == 3
    # a is past the window, yet its generation holds b, which is not: both stay until b goes.
    assert cache.finish(GENERATION - 9 + FINISH_TIME) == [] and len(cache) == 1
    again = cache.observe(_event("a.2", pod="a"), GENERATION + FINISH_TIME, "t")
    assert again is not None and again.verb == "create" and again.name == "a.2"


def test_a_single_event_seen_again_in_a_later_generation_becomes_a_series() -> None:
    cache = SeriesCache()
    cache.observe(_event("a.1"), 0.0, "t0")
    for i in range(5):  # five more generations open meanwhile
        cache.observe(_event(f"p{i}.1", pod=f"p{i}"), (i + 1) * GENERATION, "t")
    patch = cache.observe(_event("a.2"), 5.5 * GENERATION, "t1")
    assert patch is not None and patch.verb == "patch" and patch.name == "a.1"
    assert patch.body == {"series": {"count": 2, "lastObservedTime": "t1"}}
    assert len(cache) == 6
    # The series ends 6 minutes after its last observation, not with its old generation.
    assert cache.finish(5.5 * GENERATION + FINISH_TIME) == [] and len(cache) == 1
    (ended,) = cache.finish(5.5 * GENERATION + FINISH_TIME + 1)
    assert ended.body == {"series": {"count": 2, "lastObservedTime": "t1"}} and len(cache) == 0


def test_forgetting_single_events_never_ends_a_series() -> None:
    cache = SeriesCache()
    cache.observe(_event("a.1"), 0.0, "t0")
    cache.observe(_event("a.2"), 1.0, "t1")
    cache.observe(_event("b.1", pod="b"), 2.0, "t2")
    cache.forget_singles(2.0 + FINISH_TIME + 1)
    assert len(cache) == 1  # the single b is gone; the series a waits for the finish sweep
    (ended,) = cache.finish(2.0 + FINISH_TIME + 1)
    assert ended.body == {"series": {"count": 2, "lastObservedTime": "t1"}} and len(cache) == 0
