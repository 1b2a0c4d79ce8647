"""A group's pods are created concurrently (bounded), keeping expectations exact on failures."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.errors import InternalError
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS
from rayop.testing import eventually

from .raycluster_env import running_operator, simple_cluster

NS = "concurrent"
WORKERS = 40
FAILING_CALLS = {3, 17, 30}


class FlakyPodClient(KubeClient):
    """Fails a few worker pod creates (after a delay, so siblings are in flight) and counts
    how many pod creates are in flight at once."""

    in_flight = 0
    peak = 0
    calls = 0
    failures = 0

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        if res != PODS:
            return await super().create(res, obj, namespace=namespace)
        cls = FlakyPodClient
        cls.calls += 1
        call = cls.calls
        cls.in_flight += 1
        cls.peak = max(cls.peak, cls.in_flight)
        try:
            await asyncio.sleep(0.05)  # a create's latency: concurrent creates overlap in it
            if call in FAILING_CALLS:
                cls.failures += 1
                raise InternalError({"code": 500, "reason": "InternalError", "message": "injected"})
            return await super().create(res, obj, namespace=namespace)
        finally:
            cls.in_flight -= 1


@pytest.mark.slow
async def test_group_pods_are_created_concurrently_and_failures_never_duplicate() -> None:
    async with running_operator(concurrency=1, operator_client_type=FlakyPodClient) as env:
        await env.apply(simple_cluster("wide", workers=WORKERS), NS)
        await eventually(
            lambda: env.converged(NS, "wide"), timeout=60, what="the wide cluster ready"
        )
        assert FlakyPodClient.failures == len(FAILING_CALLS)
        assert 1 < FlakyPodClient.peak <= 16, "creates ran concurrently, at most 16 in flight"
        creates = [
            w
            for w in env.cp.audit.writes
            if w.resource == "pods" and w.verb == "create" and w.namespace == NS
        ]
        deletes = [
            w
            for w in env.cp.audit.writes
            if w.resource == "pods" and w.verb == "delete" and w.namespace == NS
        ]
        assert len(creates) == WORKERS + 1, (
            "the failed creates were retried once each; nothing duplicated"
        )
        assert deletes == [], "no pod created by a partly failed pass was rolled back"
        assert env.events(NS, "FailedToCreateWorkerPod")
        rc = env.raycluster(NS, "wide") or {}
        assert "ReplicaFailure" not in {c["type"] for c in rc["status"]["conditions"]}, (
            "cleared on success"
        )
