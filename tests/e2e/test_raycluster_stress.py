"""Under watch lag and write conflicts, 50 RayClusters converge with no duplicate pod writes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from rayop.runtime.reconcile import Request, Result
from rayop.testing import FAST_KUBELET, eventually

from .raycluster_env import running_operator, simple_cluster

CLUSTERS = 50
WORKERS = 8
NS = "stress"

ReconcileFunc = Callable[[Request], Awaitable[Result]]


class InFlightTracker:
    """Wraps a reconcile function and records any request reconciled twice at the same time."""

    def __init__(self) -> None:
        self.in_flight: set[Request] = set()
        self.overlaps: list[Request] = []
        self.peak = 0
        self.calls = 0

    def wrap(self, reconcile: ReconcileFunc) -> ReconcileFunc:
        async def tracked(request: Request) -> Result:
            if request in self.in_flight:
                self.overlaps.append(request)
            self.in_flight.add(request)
            self.calls += 1
            self.peak = max(self.peak, len(self.in_flight))
            try:
                return await reconcile(request)
            finally:
                self.in_flight.discard(request)

        return tracked


@pytest.mark.slow
async def test_fifty_clusters_converge_under_watch_lag_and_conflicts() -> None:
    tracker = InFlightTracker()
    async with running_operator(
        kubelet=FAST_KUBELET, concurrency=4, wrap_reconcile=tracker.wrap
    ) as env:
        env.cp.faults.watch_delay = 2.0
        env.cp.faults.conflict_rate = 0.1
        env.cp.faults.seed = 11
        await env.namespace(NS)
        await asyncio.gather(
            *(env.apply(simple_cluster(f"rc-{i}", workers=WORKERS), NS) for i in range(CLUSTERS))
        )
        await eventually(
            lambda: all(env.converged(NS, f"rc-{i}") for i in range(CLUSTERS)),
            timeout=100,
            what="all clusters ready",
        )
        pod_writes = [
            w for w in env.cp.audit.writes if w.resource == "pods" and w.subresource == ""
        ]
        creates = [w for w in pod_writes if w.verb == "create" and w.code < 300]
        deletes = [w for w in pod_writes if w.verb in ("delete", "deletecollection")]
        assert len(creates) == CLUSTERS * (WORKERS + 1), "exactly one create per pod: no duplicates"
        assert deletes == [], "no pod was ever deleted"
        assert env.cp.audit.count(verb="update", resource="rayclusters", code=409) > 0, (
            "conflicts were injected"
        )
        assert tracker.overlaps == [], "no RayCluster was reconciled by two workers at once"
        assert tracker.peak > 1, "the four workers did run concurrently"
