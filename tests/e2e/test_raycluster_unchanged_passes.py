"""Periodic RayCluster passes with nothing changed are answered without running; healing still runs."""

from __future__ import annotations

import asyncio

import pytest

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.reconciler import RayClusterReconciler
from rayop.kube.resources import PODS
from rayop.runtime.reconcile import ReconcileFunc, Request, Result
from rayop.testing import eventually

from .raycluster_env import running_operator, simple_cluster

NS = "unchanged"


async def test_a_converged_clusters_periodic_passes_are_not_run_yet_a_lost_pod_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    full: list[str] = []
    run = RayClusterReconciler._pass

    async def counted(self: RayClusterReconciler, request: Request) -> tuple[Result, bool]:
        full.append(request.name)
        return await run(self, request)

    monkeypatch.setattr(RayClusterReconciler, "_pass", counted)
    due: list[str] = []

    def wrap(reconcile: ReconcileFunc) -> ReconcileFunc:
        async def each(request: Request) -> Result:
            due.append(request.name)
            return await reconcile(request)

        return each

    options = OperatorOptions(default_requeue_seconds=1)
    async with running_operator(options=options, wrap_reconcile=wrap) as env:
        await env.apply(simple_cluster("quiet", workers=2), NS)
        await eventually(lambda: env.converged(NS, "quiet"), what="quiet ready")
        await asyncio.sleep(1.5)  # the passes the convergence itself caused have ended
        due_before, full_before = len(due), len(full)
        await asyncio.sleep(4.0)  # about four periodic passes
        periodic = len(due) - due_before
        assert periodic >= 3, f"the periodic requeue came {periodic} times"
        assert len(full) - full_before <= 1, "at most the first periodic pass ran in full"

        worker = next(
            p["metadata"]["name"]
            for p in env.pods(NS, "quiet")
            if p["metadata"]["labels"]["ray.io/node-type"] == "worker"
        )
        await env.client.delete(PODS, worker, namespace=NS)
        await eventually(
            lambda: worker not in {p["metadata"]["name"] for p in env.pods(NS, "quiet")}
            and len(env.pods(NS, "quiet")) == 3
            and env.converged(NS, "quiet"),
            what="the lost worker replaced",
        )
