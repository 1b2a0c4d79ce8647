"""Scale expectations: when a group counts as caught up with the pods just created/deleted."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.runtime.expectations import HEAD_GROUP, ScaleExpectations
from rayop.testing.clock import FakeClock


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
    cache.put("ns", "a")
    exp.expect_scale_pod("ns", "rc", "g", "a", "create")
    exp.expect_scale_pod("ns", "rc", "g", "b", "create")
    exp.expect_scale_pod("ns", "rc", "g", "c", "create")
    cache.put("ns", "c")
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
