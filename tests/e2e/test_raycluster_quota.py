"""A RayCluster in a namespace whose ResourceQuota is exhausted: the worker creates the plane
refuses (403 exceeded quota) are Warning events and a ReplicaFailure condition, retried with
backoff rather than in a hot loop, and the missing workers come once the quota grows."""

from __future__ import annotations

import asyncio
from typing import Any

from rayop.kube.resource import Resource
from rayop.kube.resources import PODS
from rayop.testing import eventually

from .raycluster_env import OperatorEnv, simple_cluster

NS = "quota"
QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")


def _workers(env: OperatorEnv) -> list[dict[str, Any]]:
    return [
        p for p in env.pods(NS, "rc") if p["metadata"]["labels"]["ray.io/node-type"] == "worker"
    ]


def _refused(env: OperatorEnv) -> int:
    return env.cp.audit.count(verb="create", resource="pods", namespace=NS, code=403)


async def test_workers_refused_by_quota_are_warnings_retried_with_backoff_until_it_grows(
    env: OperatorEnv,
) -> None:
    await env.namespace(NS)
    quota = {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "2"}}}
    await env.client.create(QUOTAS, quota, namespace=NS)
    await eventually(
        lambda: bool((env.stored(QUOTAS, NS, "pods") or {}).get("status")), what="status"
    )
    await env.apply(simple_cluster("rc", workers=3), NS)
    await eventually(lambda: len(env.pods(NS, "rc")) == 2 and _refused(env) > 0, what="refusal")
    await eventually(
        lambda: bool(env.events(NS, "FailedToCreateWorkerPod")), what="a Warning event"
    )
    warnings = env.events(NS, "FailedToCreateWorkerPod")
    assert warnings and all(e["type"] == "Warning" for e in warnings)
    assert (
        "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"
        in (warnings[0]["note"])
    )

    def replica_failure() -> dict[str, Any] | None:
        conditions = ((env.raycluster(NS, "rc") or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "ReplicaFailure"), None)

    await eventually(lambda: replica_failure() is not None, what="ReplicaFailure")
    assert (replica_failure() or {}).get("reason") == "FailedCreateWorkerPod"
    before = _refused(env)
    await asyncio.sleep(2.0)
    assert _refused(env) - before <= 12, "refused creates are retried in a hot loop"
    assert len(env.pods(NS, "rc")) == 2

    def grow(obj: dict[str, Any]) -> None:
        obj["spec"]["hard"]["pods"] = "10"

    await env.plane.edit(QUOTAS, NS, "pods", grow)
    await eventually(lambda: len(_workers(env)) == 3, timeout=60, what="3 workers")
    await eventually(lambda: env.converged(NS, "rc"), timeout=60, what="converged")
    assert env.objects(PODS, NS)
