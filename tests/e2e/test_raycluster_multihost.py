"""Atomic multi-host replica recreation (gate RayMultiHostIndexing, numOfHosts > 1).

A group of 3 replicas x 4 hosts converges; one host pod is deleted (grace period 0, as KubeRay's
own test does). Every pod set the operator's informer cache shows from then on is recorded, and
none may hold a replica index claimed by two live replicas (a new pod beside old ones of the
same replica). At the end, as KubeRay v1.7.0 does it (``reconcileMultiHostWorkerGroup``): the
rest of the broken replica is deleted, and a new replica takes the lowest free replica index
(the broken one's) under a fresh ``<group>-<5 random>`` replica name with host indices 0..3,
while the two untouched replicas keep their pods, names and indices; 12 pods, every run. rayop
creates the new replica in the pass that deletes the broken one's hosts (KubeRay a pass later).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import PODS
from rayop.runtime.informers.shared_informer import EventHandlerFuncs
from rayop.testing import eventually

from .raycluster_env import OperatorEnv, running_operator, simple_cluster

NS = "multihost"
GROUP = "tpu"
REPLICAS, HOSTS = 3, 4
NAME_KEY = "ray.io/worker-group-replica-name"
INDEX_KEY = "ray.io/worker-group-replica-index"
HOST_KEY = "ray.io/replica-host-index"
Obj = dict[str, Any]


@dataclass(frozen=True)
class Host:
    """One worker pod as the cache showed it."""

    pod: str
    replica: str
    index: str
    host: str
    terminating: bool


@pytest.fixture
async def env() -> AsyncIterator[OperatorEnv]:
    """A control plane with the RayCluster operator, RayMultiHostIndexing on."""
    gates = FeatureGates().with_overrides({"RayMultiHostIndexing": True})
    async with running_operator(options=OperatorOptions(feature_gates=gates)) as running:
        yield running


def _hosts(pods: Sequence[Mapping[str, Any]]) -> list[Host]:
    out = []
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        if labels.get("ray.io/node-type") != "worker" or labels.get("ray.io/cluster") != "mh":
            continue
        out.append(
            Host(
                pod["metadata"]["name"],
                labels.get(NAME_KEY, ""),
                labels.get(INDEX_KEY, ""),
                labels.get(HOST_KEY, ""),
                bool(pod["metadata"].get("deletionTimestamp")),
            )
        )
    return sorted(out, key=lambda h: (h.index, h.replica, h.host))


def _mixed_replicas(hosts: list[Host]) -> dict[str, set[str]]:
    """Returns each replica index that live pods of more than one replica name claim."""
    names: dict[str, set[str]] = {}
    for h in hosts:
        if not h.terminating:
            names.setdefault(h.index, set()).add(h.replica)
    return {index: found for index, found in names.items() if len(found) > 1}


def _complete(hosts: list[Host]) -> bool:
    live = [h for h in hosts if not h.terminating]
    by_replica: dict[str, list[Host]] = {}
    for h in live:
        by_replica.setdefault(h.replica, []).append(h)
    return (
        len(live) == REPLICAS * HOSTS
        and sorted({h.index for h in live}) == [str(i) for i in range(REPLICAS)]
        and all(
            sorted(m.host for m in members) == [str(i) for i in range(HOSTS)]
            and len({m.index for m in members}) == 1
            for members in by_replica.values()
        )
        and len(by_replica) == REPLICAS
    )


async def test_deleting_one_host_recreates_its_whole_replica(env: OperatorEnv) -> None:
    await env.namespace(NS)
    cluster = simple_cluster("mh", workers=REPLICAS, group=GROUP)
    cluster["spec"]["workerGroupSpecs"][0]["numOfHosts"] = HOSTS
    await env.apply(cluster, NS)
    await eventually(lambda: env.converged(NS, "mh"), timeout=60, what="3 x 4 hosts ready")
    before = _hosts(env.pods(NS, "mh"))
    assert _complete(before), before

    informer = env.manager.informers.informer(PODS)
    seen: list[list[Host]] = []

    def record(*_: Any) -> None:
        seen.append(_hosts(informer.list(NS)))

    informer.add_event_handler(EventHandlerFuncs(add=record, update=record, delete=record))
    victim = next(h for h in before if h.index == "1" and h.host == "2")
    await env.client.delete(PODS, victim.pod, namespace=NS, grace_period_seconds=0)

    def recreated() -> bool:
        hosts = _hosts(env.pods(NS, "mh", live_only=False))
        return _complete(hosts) and not any(h.terminating for h in hosts)

    try:
        await eventually(recreated, timeout=60, what="the broken replica recreated")
    except AssertionError as err:  # say what the store and the operator's cache hold
        store = _hosts(env.pods(NS, "mh", live_only=False))
        raise AssertionError(f"{err}\nstore: {store}\ncache: {seen[-1:]}") from err
    await eventually(lambda: env.converged(NS, "mh"), timeout=60, what="ready again")

    for snapshot in seen:
        assert not _mixed_replicas(snapshot), snapshot
    after = _hosts(env.pods(NS, "mh"))
    assert len(after) == REPLICAS * HOSTS
    kept = {h for h in before if h.replica != victim.replica}
    assert kept <= set(after), "the untouched replicas keep their pods, names and indices"
    new = [h for h in after if h not in kept]
    assert len({h.replica for h in new}) == 1
    (new_name,) = {h.replica for h in new}
    assert new_name != victim.replica and new_name.startswith(f"{GROUP}-")
    assert len(new_name) == len(GROUP) + 6
    assert {h.index for h in new} == {victim.index}
    assert sorted(h.host for h in new) == [str(i) for i in range(HOSTS)]
    assert not ({h.pod for h in new} & {h.pod for h in before})
    # The cache showed the broken replica's hosts terminating before any new host appeared.
    first_new = next(i for i, s in enumerate(seen) if any(h.replica == new_name for h in s))
    assert all(h.terminating for h in seen[first_new - 1] if h.replica == victim.replica), seen[
        first_new - 1
    ]
