"""The pods step uses scale expectations as KubeRay does (kuberay-v1.md §2).

A group whose expectations are unsatisfied is skipped whole; an unsatisfied head group skips
only the head; creates are recorded under the name the server generated; a delete answered
NotFound for an unhealthy pod records nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, cast

import pytest

from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.raycluster.pod_sync import reconcile_pods
from rayop.controllers.raycluster.reconcile_context import (
    ClusterClient,
    ReconcileContext,
    ReconcilerDeps,
)
from rayop.controllers.raycluster.status import ReplicaFailureError
from rayop.kube.errors import NotFound
from rayop.kube.resource import Resource
from rayop.runtime.events import EventRecorder
from rayop.runtime.expectations import CREATE, DELETE, HEAD_GROUP, ScaleExpectations
from rayop.runtime.indexer import OWNER_UID_INDEX
from rayop.runtime.informer_factory import Informer, InformerFactory
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing.clock import FakeClock

from ._fixtures import minimal_cluster

NS = "ns"
UID = "u-1"


class PodCache:
    """The pod informer cache as the context reads it (by owner uid, or by name)."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.pods.get(name)

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]:
        assert index == OWNER_UID_INDEX
        return [
            p
            for p in self.pods.values()
            if any(r.get("uid") == value for r in p["metadata"].get("ownerReferences", []))
        ]


class FakeApi:
    """Creates pods with generated names; deletes answer NotFound for names in ``gone``."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.gone: set[str] = set()

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        created = copy.deepcopy(dict(obj))
        name = f"{obj['metadata']['generateName']}x{len(self.created)}"
        created["metadata"]["name"] = name
        self.created.append(name)
        return created

    async def delete(self, res: Resource, name: str, **_: Any) -> dict[str, Any]:
        if name in self.gone:
            raise NotFound({"code": 404, "reason": "NotFound", "message": name})
        self.deleted.append(name)
        return {}


class NoEvents:
    def event(self, *args: Any, **kwargs: Any) -> None:
        pass


def _pod(name: str, node_type: str, group: str, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {
                "ray.io/cluster": "rc",
                "ray.io/node-type": node_type,
                "ray.io/group": group,
            },
            "ownerReferences": [{"uid": UID, "controller": True, "kind": "RayCluster"}],
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "ray"}]},
        "status": {"phase": phase},
    }


def _context(cluster: dict[str, Any], cache: PodCache, api: FakeApi) -> ReconcileContext:
    clock = FakeClock()
    deps = ReconcilerDeps(
        client=cast(ClusterClient, api),
        clusters=cast(Informer, None),
        pods=cast(Informer, cache),
        services=cast(Informer, None),
        informers=cast(InformerFactory, None),
        recorder=cast(EventRecorder, NoEvents()),
        expectations=ScaleExpectations(cache.get, clock=clock),
        own_writes=OwnWrites(clock=clock),
        options=OperatorOptions(),
        clock=clock,
    )
    return ReconcileContext(
        request=Request(NS, "rc"), deps=deps, cached=cluster, cluster=copy.deepcopy(cluster)
    )


def _two_groups() -> dict[str, Any]:
    cluster = minimal_cluster()
    first = cluster["spec"]["workerGroupSpecs"][0]
    first.update(groupName="a", replicas=1)
    cluster["spec"]["workerGroupSpecs"].append({**copy.deepcopy(first), "groupName": "b"})
    return cluster


async def test_unsatisfied_group_is_skipped_and_creates_are_recorded_by_generated_name() -> None:
    cache, api = PodCache(), FakeApi()
    cache.pods["rc-head-1"] = _pod("rc-head-1", "head", "headgroup")
    cache.pods["old-a"] = _pod("old-a", "worker", "a")
    ctx = _context(_two_groups(), cache, api)
    expectations = ctx.deps.expectations
    # Group "a" deleted old-a, which the cache still holds: the whole group waits.
    expectations.expect_scale_pod(NS, "rc", "a", "old-a", DELETE)
    # The head group waits for a create the cache has not seen; the workers go on.
    expectations.expect_scale_pod(NS, "rc", HEAD_GROUP, "rc-head-new", CREATE)
    del cache.pods["rc-head-1"]

    await reconcile_pods(ctx)

    assert api.created == ["rc-b-worker-x0"], "only group b acted; no head, nothing for a"
    assert not expectations.is_satisfied(NS, "rc", "b"), "recorded under the generated name"
    cache.pods["rc-b-worker-x0"] = _pod("rc-b-worker-x0", "worker", "b")
    assert expectations.is_satisfied(NS, "rc", "b")

    del cache.pods["old-a"]
    cache.pods["rc-head-new"] = _pod("rc-head-new", "head", "headgroup")
    await reconcile_pods(ctx)  # the same expectations, now satisfied for "a" and the head
    assert api.created[1:] == ["rc-a-worker-x1"]


async def test_unhealthy_pod_already_gone_records_no_expectation() -> None:
    cache, api = PodCache(), FakeApi()
    cache.pods["rc-head-1"] = _pod("rc-head-1", "head", "headgroup")
    cache.pods["dead-a"] = _pod("dead-a", "worker", "a", phase="Failed")
    api.gone.add("dead-a")
    ctx = _context(_two_groups(), cache, api)

    with pytest.raises(ReplicaFailureError):
        await reconcile_pods(ctx)

    assert ctx.deps.expectations.is_satisfied(NS, "rc", "a"), "NotFound recorded nothing"
    assert api.created == [], "no creates in a pass that met an unhealthy pod"
