"""A big worker group's creates run outside the pass (issue 33 part 2).

The pass that plans more than ``background_threshold`` creations of a group hands them to a
background creator and ends at once; the group stays unsatisfied (pending creates) so no pass
plans them again; the creator makes the same creates and events a pass would, enqueues the
cluster when it ends, and the next pass raises its failure. Suspension, deletion and dropped
expectations cancel it and leave nothing pending.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rayop.controllers.raycluster.context import ReconcilerDeps
from rayop.controllers.raycluster.group_creates import GroupCreates, background_threshold
from rayop.controllers.raycluster.pod_sync import forget_cluster, reconcile_pods
from rayop.controllers.raycluster.reconciler import RayClusterReconciler
from rayop.controllers.raycluster.status import ReplicaFailureError
from rayop.kube.errors import ApiError
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.reconcile import Request
from rayop.testing import FakeClock

from ._fakes import NS, Fakes, context, pod
from ._fixtures import minimal_cluster

CONCURRENCY = 4
BIG = background_threshold(CONCURRENCY) + 7  # 15 creations: more than the threshold


def _cluster(replicas: int) -> dict[str, Any]:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=replicas, maxReplicas=replicas)
    return cluster


class Gate:
    """Holds every pod create until opened; counts the creates in flight."""

    def __init__(self, fakes: Fakes) -> None:
        self.open = asyncio.Event()
        self.in_flight = 0
        self.most = 0
        create = fakes.api.create

        async def held_create(res: Any, obj: Any, *, namespace: str | None = None) -> Any:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            try:
                await self.open.wait()
                return await create(res, obj, namespace=namespace)
            finally:
                self.in_flight -= 1

        fakes.api.create = held_create  # type: ignore[method-assign]


def _deps(fakes: Fakes) -> tuple[ReconcilerDeps, GroupCreates, list[Request]]:
    base = fakes.deps()
    creates = GroupCreates(base.expectations)
    done: list[Request] = []
    creates.on_done = done.append
    deps = dataclasses.replace(base, group_creates=creates, pod_call_concurrency=CONCURRENCY)
    return deps, creates, done


def _created(fakes: Fakes) -> list[str]:
    return [c.name for c in fakes.api.calls_of("create", "Pod")]


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_big_groups_creates_leave_the_pass_and_no_pass_plans_them_again() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    gate = Gate(fakes)
    deps, creates, done = _deps(fakes)
    cluster = _cluster(BIG)

    # The pass ends although no create has been answered (the old pass would block here).
    await asyncio.wait_for(reconcile_pods(context(cluster, deps=deps)), timeout=1.0)
    assert creates.running(NS, "rc", "g")
    assert deps.expectations.pending_creates(NS, "rc", "g") == BIG
    assert not deps.expectations.is_satisfied(NS, "rc", "g")
    await _settle()
    assert gate.in_flight == CONCURRENCY, "the creator keeps pod_call_concurrency in flight"

    await reconcile_pods(context(cluster, deps=deps))  # another pass meanwhile plans nothing
    await _settle()
    assert gate.in_flight == CONCURRENCY and len(creates) == 1

    gate.open.set()
    while creates.running(NS, "rc", "g"):
        await asyncio.sleep(0)
    assert len(_created(fakes)) == BIG, "each missing pod created once"
    assert fakes.events.reasons() == ["CreatedWorkerPod"] * BIG
    assert gate.most == CONCURRENCY
    assert deps.expectations.pending_creates(NS, "rc", "g") == 0
    assert not deps.expectations.is_satisfied(NS, "rc", "g"), "each create's expectation stays"
    assert done == [Request(NS, "rc")], "the cluster is enqueued when the creator ends"


async def test_a_small_group_is_still_created_in_the_pass() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    deps, creates, done = _deps(fakes)
    small = background_threshold(CONCURRENCY)

    await reconcile_pods(context(_cluster(small), deps=deps))

    assert len(_created(fakes)) == small and len(creates) == 0 and done == []


async def test_the_creators_failure_is_raised_by_the_next_pass_and_nothing_is_rolled_back() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    boom = ApiError({"code": 500, "message": "boom"})
    create = fakes.api.create
    calls = 0

    async def every_third_fails(res: Any, obj: Any, *, namespace: str | None = None) -> Any:
        nonlocal calls
        calls += 1
        if calls % 3 == 0:
            raise boom
        return await create(res, obj, namespace=namespace)

    fakes.api.create = every_third_fails  # type: ignore[method-assign]
    deps, creates, done = _deps(fakes)
    cluster = _cluster(BIG)

    await reconcile_pods(context(cluster, deps=deps))  # the pass itself does not fail
    while creates.running(NS, "rc", "g"):
        await asyncio.sleep(0)
    assert done == [Request(NS, "rc")]
    assert deps.expectations.pending_creates(NS, "rc", "g") == 0
    reasons = fakes.events.reasons()
    assert reasons.count("FailedToCreateWorkerPod") == BIG // 3
    assert reasons.count("CreatedWorkerPod") == BIG - BIG // 3

    with pytest.raises(ReplicaFailureError) as caught:
        await reconcile_pods(context(cluster, deps=deps))
    assert caught.value.reason == "FailedCreateWorkerPod"
    assert f"failed to create {BIG // 3} of {BIG} worker Pods" in str(caught.value)
    assert not fakes.api.calls_of("delete", "Pod"), "nothing created is rolled back"
    # raised once: the pass after that sees the group as it is
    await reconcile_pods(context(cluster, deps=deps))


async def test_suspending_the_cluster_cancels_its_creator_and_leaves_nothing_pending() -> None:
    fakes = Fakes()
    fakes.options = dataclasses.replace(
        fakes.options,
        feature_gates=dataclasses.replace(
            fakes.options.feature_gates, ray_cluster_status_conditions=False
        ),
    )
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    gate = Gate(fakes)
    deps, creates, done = _deps(fakes)
    await reconcile_pods(context(_cluster(BIG), deps=deps))
    await _settle()
    assert gate.in_flight == CONCURRENCY

    await reconcile_pods(context(minimal_cluster(suspend=True), deps=deps))

    assert len(creates) == 0 and gate.in_flight == 0
    assert deps.expectations.pending_creates(NS, "rc", "g") == 0
    assert done == [], "a cancelled creator enqueues nothing"
    assert fakes.api.calls_of("delete", "Pod"), "then the suspend deletes the pods"


async def test_a_deleted_cluster_or_dropped_expectations_stop_the_creator() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    gate = Gate(fakes)
    deps, creates, done = _deps(fakes)
    await reconcile_pods(context(_cluster(BIG), deps=deps))
    await _settle()
    assert gate.in_flight == CONCURRENCY

    # the cluster is gone from the cache: the reconciler's "deleted" path
    await RayClusterReconciler(deps).reconcile(Request(NS, "rc"))
    assert len(creates) == 0 and gate.in_flight == 0
    assert deps.expectations.pending_creates(NS, "rc", "g") == 0

    await reconcile_pods(context(_cluster(BIG), deps=deps))
    await _settle()
    assert len(creates) == 1
    await forget_cluster(deps, NS, "rc")  # what the sharding drain calls
    assert len(creates) == 0 and gate.in_flight == 0
    assert deps.expectations.pending_creates(NS, "rc", "g") == 0
    assert done == []


async def test_a_cluster_being_deleted_stops_its_creator() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    gate = Gate(fakes)
    deps, creates, _ = _deps(fakes)
    cluster = _cluster(BIG)
    await reconcile_pods(context(cluster, deps=deps))
    await _settle()
    assert gate.in_flight == CONCURRENCY

    deleting = _cluster(BIG)
    deleting["metadata"]["deletionTimestamp"] = "2026-12-05T00:00:00Z"
    deleting["metadata"]["finalizers"] = ["keep"]
    fakes.clusters.put(deleting)
    await RayClusterReconciler(deps).reconcile(Request(NS, "rc"))

    assert len(creates) == 0 and gate.in_flight == 0
    assert deps.expectations.pending_creates(NS, "rc", "g") == 0


# -- the primitive, under any sequence of starts, ends and stops ------------------------------

GROUPS = ("a", "b", "c")
operations = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.sampled_from(GROUPS), st.integers(0, 5), st.booleans()),
        st.tuples(st.just("end"), st.sampled_from(GROUPS), st.just(0), st.just(False)),
        st.tuples(st.just("stop"), st.just(""), st.just(0), st.just(False)),
        st.tuples(st.just("forget"), st.just(""), st.just(0), st.just(False)),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(ops=operations)
def test_never_two_creators_per_group_and_no_pending_count_is_left_behind(
    ops: list[tuple[str, str, int, bool]],
) -> None:
    async def main() -> None:
        expectations = ScaleExpectations(lambda namespace, name: None, clock=FakeClock())
        creates = GroupCreates(expectations)
        running: dict[str, int] = dict.fromkeys(GROUPS, 0)
        releases: dict[str, asyncio.Event] = {}
        counts: dict[str, int] = {}

        def creator(group: str, fail: bool) -> Callable[[], Awaitable[None]]:
            async def create() -> None:
                running[group] += 1
                try:
                    assert running[group] == 1, "two creators of one group"
                    await releases[group].wait()
                    if fail:
                        raise ReplicaFailureError("FailedCreateWorkerPod", "boom")
                finally:
                    running[group] -= 1

            return create

        for op, group, count, fail in ops:
            if op == "start":
                was_running = creates.running(NS, "rc", group)
                if not was_running:
                    releases[group] = asyncio.Event()
                started = creates.start(NS, "rc", group, count, creator(group, fail))
                assert started is not was_running
                if started:
                    counts[group] = count
            elif op == "end" and creates.running(NS, "rc", group):
                releases[group].set()
            elif op == "stop":
                await creates.stop(NS, "rc")
            elif op == "forget":
                await creates.stop(NS, "rc")
                expectations.delete(NS, "rc")
            for _ in range(3):
                await asyncio.sleep(0)
            for name in GROUPS:
                pending = expectations.pending_creates(NS, "rc", name)
                assert pending >= 0
                if creates.running(NS, "rc", name):
                    assert pending == counts[name]
                else:
                    assert pending == 0, "no pending count without a running creator"
                    assert running[name] == 0
        await creates.close()
        assert len(creates) == 0
        assert all(expectations.pending_creates(NS, "rc", g) == 0 for g in GROUPS)

    asyncio.run(main())
