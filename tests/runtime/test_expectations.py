"""Scale expectations: when a group counts as caught up with the pods just created/deleted."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.kube.resources import PODS
from rayop.runtime.expectations import HEAD_GROUP, ScaleExpectations, pod_observer
from rayop.runtime.informers.shared_informer import SharedInformer
from rayop.testing import eventually
from rayop.testing.clock import FakeClock

from .informer_fakes import FakeApi, pod


class Cache:
    """A stand-in informer cache of pods, recording every lookup."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.lookups: list[str] = []

    def lookup(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.lookups.append(name)
        return self.pods.get((namespace, name))

    def put(self, namespace: str, name: str, **metadata: Any) -> None:
        self.pods[(namespace, name)] = {"metadata": {"name": name, **metadata}}


@pytest.fixture
def cache() -> Cache:
    return Cache()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def exp(cache: Cache, clock: FakeClock) -> ScaleExpectations:
    return ScaleExpectations(cache.lookup, create_timeout=30.0, clock=clock)


def test_unknown_group_is_satisfied(exp: ScaleExpectations) -> None:
    assert exp.is_satisfied("ns", "rc", "workers")


def test_create_satisfied_once_cache_has_pod(exp: ScaleExpectations, cache: Cache) -> None:
    exp.expect_scale_pod("ns", "rc", "workers", "w-1", "create")
    assert not exp.is_satisfied("ns", "rc", "workers")
    assert not exp.is_satisfied("ns", "rc", "workers")
    cache.put("ns", "w-1")
    assert exp.is_satisfied("ns", "rc", "workers")
    assert len(exp) == 0  # satisfied entries are removed
    del cache.pods[("ns", "w-1")]
    assert exp.is_satisfied("ns", "rc", "workers")


def test_create_satisfied_after_timeout(exp: ScaleExpectations, clock: FakeClock) -> None:
    exp.expect_scale_pod("ns", "rc", HEAD_GROUP, "head", "create")
    clock.step(30.0)
    assert not exp.is_satisfied("ns", "rc", HEAD_GROUP)  # strictly after the timeout
    clock.step(0.001)
    assert exp.is_satisfied("ns", "rc", HEAD_GROUP)


def test_delete_needs_pod_gone_even_with_deletion_timestamp(
    exp: ScaleExpectations, cache: Cache, clock: FakeClock
) -> None:
    cache.put("ns", "w-1", deletionTimestamp="2026-01-01T00:00:00Z")
    exp.expect_scale_pod("ns", "rc", "workers", "w-1", "delete")
    assert not exp.is_satisfied("ns", "rc", "workers")
    clock.step(3600.0)  # deletes never time out
    assert not exp.is_satisfied("ns", "rc", "workers")
    del cache.pods[("ns", "w-1")]
    assert exp.is_satisfied("ns", "rc", "workers")


def test_stops_at_first_unsatisfied(exp: ScaleExpectations, cache: Cache) -> None:
    exp.expect_scale_pod("ns", "rc", "g", "a", "create")
    exp.expect_scale_pod("ns", "rc", "g", "b", "create")
    exp.expect_scale_pod("ns", "rc", "g", "c", "create")
    cache.put("ns", "a")
    cache.put("ns", "c")
    cache.lookups.clear()
    assert not exp.is_satisfied("ns", "rc", "g")
    assert cache.lookups == ["a", "b"]  # c is not checked
    assert len(exp) == 2  # a was removed, b and c remain
    cache.put("ns", "b")
    assert exp.is_satisfied("ns", "rc", "g")
    assert len(exp) == 0


def test_second_expectation_for_same_pod_overwrites(exp: ScaleExpectations, cache: Cache) -> None:
    cache.put("ns", "w-1")
    exp.expect_scale_pod("ns", "rc", "g", "w-1", "create")
    exp.expect_scale_pod("ns", "rc", "g", "w-1", "delete")
    assert len(exp) == 1
    assert not exp.is_satisfied("ns", "rc", "g")  # the delete replaced the satisfied create


def test_overwrite_moves_pod_between_groups(exp: ScaleExpectations) -> None:
    exp.expect_scale_pod("ns", "rc", "g1", "p", "create")
    exp.expect_scale_pod("ns", "rc", "g2", "p", "create")
    assert exp.is_satisfied("ns", "rc", "g1")
    assert not exp.is_satisfied("ns", "rc", "g2")


def test_groups_clusters_and_namespaces_are_independent(exp: ScaleExpectations) -> None:
    exp.expect_scale_pod("ns", "rc", "g1", "p1", "create")
    assert exp.is_satisfied("ns", "rc", "g2")
    assert exp.is_satisfied("ns", "other", "g1")
    assert exp.is_satisfied("ns2", "rc", "g1")
    assert not exp.is_satisfied("ns", "rc", "g1")


def test_delete_drops_whole_cluster(exp: ScaleExpectations) -> None:
    exp.expect_scale_pod("ns", "rc", "g1", "p1", "create")
    exp.expect_scale_pod("ns", "rc", HEAD_GROUP, "h", "delete")
    exp.expect_scale_pod("ns", "other", "g1", "p2", "create")
    exp.delete("ns", "rc")
    assert exp.is_satisfied("ns", "rc", "g1")
    assert exp.is_satisfied("ns", "rc", HEAD_GROUP)
    assert not exp.is_satisfied("ns", "other", "g1")
    assert len(exp) == 1


def test_rejects_unknown_action(exp: ScaleExpectations) -> None:
    with pytest.raises(ValueError):
        exp.expect_scale_pod("ns", "rc", "g", "p", "scale")  # type: ignore[arg-type]


def test_pending_creates_hold_the_group_without_a_timeout_until_answered(
    exp: ScaleExpectations, cache: Cache, clock: FakeClock
) -> None:
    exp.expect_creates("ns", "rc", "g", 3)
    assert not exp.is_satisfied("ns", "rc", "g")
    assert exp.is_satisfied("ns", "rc", "other"), "only that group waits"
    clock.step(120.0)  # far beyond the create timeout: it runs from an answer, not before
    assert not exp.is_satisfied("ns", "rc", "g")

    exp.expect_scale_pod("ns", "rc", "g", "p1", "create")  # one create returned
    exp.create_answered("ns", "rc", "g", 3)
    assert exp.pending_creates("ns", "rc", "g") == 0
    assert not exp.is_satisfied("ns", "rc", "g"), "p1 is not in the cache yet"
    cache.put("ns", "p1")
    assert exp.is_satisfied("ns", "rc", "g")

    exp.create_answered("ns", "rc", "g", 5)
    assert exp.pending_creates("ns", "rc", "g") == 0, "never below zero"
    with pytest.raises(ValueError):
        exp.expect_creates("ns", "rc", "g", -1)


def test_dropping_a_clusters_expectations_drops_its_pending_creates(
    exp: ScaleExpectations,
) -> None:
    exp.expect_creates("ns", "rc", "g", 2)
    exp.expect_creates("ns", "other", "g", 2)
    exp.delete("ns", "rc")
    assert exp.is_satisfied("ns", "rc", "g")
    assert exp.pending_creates("ns", "other", "g") == 2


def test_an_observed_pod_drops_its_expectation_without_a_pass(
    exp: ScaleExpectations, cache: Cache
) -> None:
    cache.put("ns", "old")
    exp.expect_scale_pod("ns", "rc", "g", "new", "create")
    exp.expect_scale_pod("ns", "rc", "g", "old", "delete")
    exp.observed("ns", "old", present=True)  # the delete is not met while the pod is there
    exp.observed("ns", "new", present=False)  # nor is a create by the pod's absence
    assert len(exp) == 2
    cache.put("ns", "new")
    exp.observed("ns", "new", present=True)
    del cache.pods[("ns", "old")]
    exp.observed("ns", "old", present=False)
    exp.observed("ns", "unknown", present=True)
    assert len(exp) == 0 and exp.is_satisfied("ns", "rc", "g")


def test_a_write_the_cache_already_shows_is_not_kept(exp: ScaleExpectations, cache: Cache) -> None:
    # The watch event of a create (or a delete) may come before the write's answer.
    cache.put("ns", "seen")
    exp.expect_scale_pod("ns", "rc", "g", "seen", "create")
    exp.expect_scale_pod("ns", "rc", "g", "gone", "delete")
    assert len(exp) == 0 and exp.is_satisfied("ns", "rc", "g")
    exp.expect_scale_pod("ns", "rc", "g", "seen", "delete")  # still there: kept
    assert len(exp) == 1 and not exp.is_satisfied("ns", "rc", "g")


async def test_the_pod_informers_events_drop_met_expectations() -> None:
    # A fleet created at once: no pass comes back to a cluster until the queue has gone round
    # every cluster, so its pods' expectations must go with their watch events.
    api = FakeApi()
    api.put(pod("doomed", "ns"))
    informer = SharedInformer(api, PODS)
    exp = ScaleExpectations(informer.get)
    informer.add_event_handler(pod_observer(exp))
    informer.start()
    try:
        assert await informer.wait_for_sync(5)
        exp.expect_scale_pod("ns", "rc", "g", "w-1", "create")
        exp.expect_scale_pod("ns", "rc", "g", "doomed", "delete")
        assert len(exp) == 2
        api.put(pod("w-1", "ns"))
        api.remove("ns", "doomed")
        await eventually(lambda: len(exp) == 0, timeout=5, what="both expectations dropped")
    finally:
        await informer.stop()
