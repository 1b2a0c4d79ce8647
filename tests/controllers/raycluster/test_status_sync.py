"""The status step: computed from the caches, written on change only, never while the cache is
behind our own last write (kuberay-v1.md §3.6, §3.7)."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api import keys
from rayop.api.common import format_time
from rayop.controllers.raycluster.status import ReplicaFailureError, StatusUnavailableError
from rayop.controllers.raycluster.status_sync import sync_status, write_status_reason

from ._fakes import UID, Fakes, context, pod
from ._fixtures import minimal_cluster


def _head_service() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "rc-head-svc",
            "labels": {
                keys.RAY_CLUSTER: "rc",
                keys.RAY_NODE_TYPE: "head",
                keys.RAY_IDENTIFIER: "rc-head",
            },
            "ownerReferences": [{"uid": UID, "controller": True}],
        },
        "spec": {"clusterIP": "10.0.0.9", "ports": [{"name": "dashboard", "port": 8265}]},
    }


def _fakes() -> Fakes:
    fakes = Fakes()
    fakes.services.put(_head_service())
    fakes.pods.put(pod("rc-head-1", "head", "headgroup"))
    return fakes


def _cluster() -> dict[str, Any]:
    cluster = minimal_cluster()
    cluster["metadata"]["resourceVersion"] = "7"
    return cluster


async def test_a_changed_status_is_written_with_the_clock_s_time_and_recorded() -> None:
    fakes = _fakes()
    ctx = context(_cluster(), fakes)

    assert await sync_status(ctx, None) is True

    (write,) = fakes.api.calls_of("update/status", "RayCluster")
    status = write.body["status"]
    assert write.body["metadata"]["resourceVersion"] == "7", "based on the cached version"
    assert status["lastUpdateTime"] == format_time(fakes.clock.wall())
    assert status["desiredWorkerReplicas"] == 2
    assert status["head"] == {
        "podName": "rc-head-1",
        "serviceIP": "10.0.0.9",
        "serviceName": "rc-head-svc",
    }
    assert ctx.deps.own_writes.cache_behind(ctx.cached), "our write is pending in the cache"


async def test_an_unchanged_status_is_not_written() -> None:
    fakes = _fakes()
    await sync_status(context(_cluster(), fakes), None)
    cluster = _cluster()
    cluster["status"] = fakes.api.calls_of("update/status")[0].body["status"]
    fakes.clock.step(30)  # only lastUpdateTime and transition times would differ

    assert await sync_status(context(cluster, fakes), None) is False
    assert len(fakes.api.calls_of("update/status")) == 1


async def test_no_write_while_the_cache_is_behind_our_last_write() -> None:
    fakes = _fakes()
    deps = fakes.deps()
    await sync_status(context(_cluster(), fakes, deps), None)
    stale = _cluster()  # the cache still shows resourceVersion 7

    assert await sync_status(context(stale, fakes, deps), None) is True, "still to be written"
    assert len(fakes.api.calls_of("update/status")) == 1, "a second write could only get a 409"

    fakes.clock.step(10)  # the tracker forgets an unobserved write after 10 s
    await sync_status(context(stale, fakes, deps), None)
    assert len(fakes.api.calls_of("update/status")) == 2


async def test_no_head_service_means_no_status_yet() -> None:
    fakes = Fakes()
    with pytest.raises(StatusUnavailableError):
        await sync_status(context(_cluster(), fakes), None)
    assert fakes.api.calls == []


async def test_a_reconcile_error_becomes_replica_failure_condition() -> None:
    fakes = _fakes()
    error = ReplicaFailureError("FailedCreateWorkerPod", "boom")
    await sync_status(context(_cluster(), fakes), error)
    conditions = fakes.api.calls_of("update/status")[0].body["status"]["conditions"]
    failure = next(c for c in conditions if c["type"] == "ReplicaFailure")
    assert (failure["status"], failure["reason"]) == ("True", "FailedCreateWorkerPod")


async def test_write_status_reason_keeps_the_rest_of_the_status() -> None:
    fakes = Fakes()
    cluster = _cluster()
    cluster["status"] = {"state": "ready", "futureField": 1}
    assert await write_status_reason(context(cluster, fakes), "InvalidRayClusterSpec: x") is True
    status = fakes.api.calls_of("update/status")[0].body["status"]
    assert status["state"] == "ready" and status["futureField"] == 1
    assert status["reason"] == "InvalidRayClusterSpec: x"
