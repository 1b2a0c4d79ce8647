"""Three replicas with ``--sharding`` on one embedded plane (issue 30): RayClusters converge
with no duplicate pod create, each replica caches only its share, a partitioned replica's
roots are taken over within the Lease duration plus 5 s, and the pass record shows no two
replicas ever reconciled one key at once."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.assembly.operator_settings import ShardingSettings
from rayop.controllers.assembly.sharding import KEYS
from rayop.kube.client import KubeClient, PatchType
from rayop.kube.clock import MONOTONIC, Clock
from rayop.kube.config import KubeConfig
from rayop.kube.errors import TransportError
from rayop.kube.resource import Resource
from rayop.kube.resources import LEASES, PODS, RAY_CLUSTERS
from rayop.runtime.manager import LeadershipLost
from rayop.runtime.sharding.pass_record import Pass, overlaps, read_passes
from rayop.testing import (
    PlaneUnderTest,
    RunningOperator,
    eventually,
    open_control_plane,
    open_operator,
)

NS = "shards"
LEASES_NS = "operator"
"""The leader-election namespace (not "default": the membership Leases must go there too)."""
CLUSTERS = 12
WORKERS = 2
LEASE = 3.0

CLUSTER: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "c"},
    "spec": {
        "rayVersion": "2.46.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2.46.0"}]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "w",
                "replicas": WORKERS,
                "minReplicas": 0,
                "maxReplicas": 5,
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-worker", "image": "ray:2.46.0"}]}
                },
            }
        ],
    },
}


class Replica(KubeClient):
    """The operator's client, counting pod creates; ``partitioned`` cuts it off the server."""

    pod_creates = 0
    partitioned = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.root_patches: list[str] = []
        """The RayClusters this replica patched, by name."""

    def sibling(
        self, *, clock: Clock | None = None, qps: float | None = None, burst: int | None = None
    ) -> KubeClient:
        return Replica(self.config, qps=self.throttle.qps if qps is None else qps,
                       burst=self.throttle.burst if burst is None else burst,
                       metrics=self.metrics, clock=clock or MONOTONIC)  # fmt: skip

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: PatchType = "merge", subresource: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        if res == RAY_CLUSTERS:
            self.root_patches.append(name)
        return await super().patch(
            res, name, body, namespace=namespace, patch_type=patch_type, subresource=subresource
        )

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        created = await super().create(res, obj, namespace=namespace)
        if res == PODS:
            Replica.pod_creates += 1
        return created

    async def _call_json(self, *args: Any, **kwargs: Any) -> Any:
        if self.partitioned:
            raise TransportError({"code": 0, "message": "partitioned (test)"})
        return await super()._call_json(*args, **kwargs)


def clients_of(running: RunningOperator) -> list[Replica]:
    """Every client of a replica: the operator's and those its manager made of its own (Leases,
    events, the sharder), all of the operator client's class."""
    found = [running.client, *running.manager.own_clients]
    assert all(isinstance(c, Replica) for c in found)
    return [c for c in found if isinstance(c, Replica)]


def settings(replica: str, record: Path) -> ShardingSettings:
    return ShardingSettings(
        replica_id=replica,
        pass_record=str(record / f"{replica}.jsonl"),
        sharder_interval=0.2,
        lease_duration=LEASE,
        renew_deadline=2.0,
        retry_period=0.5,
    )


@contextlib.asynccontextmanager
async def replica(plane: PlaneUnderTest, name: str, record: Path) -> AsyncIterator[RunningOperator]:
    def client(config: KubeConfig) -> KubeClient:
        return Replica(config, qps=-1)

    await plane.namespace(LEASES_NS)
    async with open_operator(
        plane,
        concurrency=2,
        leader_election_namespace=LEASES_NS,
        client_factory=client,
        sharding=settings(name, record),
        ready_timeout=20,
    ) as running:
        yield running


async def create_clusters(plane: PlaneUnderTest) -> None:
    await plane.namespace(NS)
    for i in range(CLUSTERS):
        body = copy.deepcopy(CLUSTER)
        body["metadata"]["name"] = f"c{i}"
        await plane.create(RAY_CLUSTERS, body, NS)


def recorded(directory: Path) -> list[Pass]:
    return list(read_passes(sorted(directory.glob("*.jsonl"))))


def owner(plane: PlaneUnderTest, name: str) -> str | None:
    obj = plane.stored(RAY_CLUSTERS, NS, name)
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(KEYS.shard)


def all_converged(plane: PlaneUnderTest) -> bool:
    return all(plane.raycluster_converged(NS, f"c{i}") for i in range(CLUSTERS))


@pytest.mark.parametrize("victim_leads", [False, True], ids=["follower", "leader"])
async def test_three_replicas_share_converge_and_take_over_a_partitioned_one(
    tmp_path: Path, victim_leads: bool
) -> None:
    Replica.pod_creates = 0
    async with open_control_plane() as plane, contextlib.AsyncExitStack() as stack:
        stacks = {n: contextlib.AsyncExitStack() for n in ("r0", "r1", "r2")}
        replicas = {}
        for name, own in stacks.items():
            await stack.enter_async_context(own)
            replicas[name] = await own.enter_async_context(replica(plane, name, tmp_path))
        await create_clusters(plane)
        await eventually(lambda: all_converged(plane), timeout=60, what="every RayCluster ready")
        assert Replica.pod_creates == CLUSTERS * (1 + WORKERS), "no duplicate pod creates"
        members = await plane.client.list(LEASES, namespace=LEASES_NS)
        assert {KEYS.lease_name(n) for n in replicas} <= {
            m["metadata"]["name"] for m in members["items"]
        }, "the membership Leases are in the leader-election namespace"

        owners = {f"c{i}": owner(plane, f"c{i}") for i in range(CLUSTERS)}
        assert set(owners.values()) <= set(replicas)
        for name, running in replicas.items():
            cached = {
                (o.get("metadata") or {}).get("name")
                for o in running.manager.informers.informer(RAY_CLUSTERS).list(NS)
            }
            share = {c for c, o in owners.items() if o == name}
            assert cached == share, f"{name} caches exactly its share"
            for pod in running.manager.informers.informer(PODS).list(NS):
                assert pod["metadata"]["labels"][KEYS.shard] == name
        assert len({o for o in owners.values()}) >= 2, "the clusters are spread"

        # A label edited by hand to name a replica that does not run the sharder: that replica's
        # informer shows it, and the replica itself puts it back (the sharder's rounds would
        # see it only at their next full round).
        edited = "c0"
        named = next(
            n for n, r in sorted(replicas.items())
            if n != owners[edited] and not r.manager.is_leader()
        )  # fmt: skip
        named_clients = clients_of(replicas[named])
        edit_at = time.monotonic()
        await plane.edit(RAY_CLUSTERS, NS, edited,
                         lambda rc: rc["metadata"]["labels"].update({KEYS.shard: named}))  # fmt: skip
        await eventually(lambda: owner(plane, edited) == owners[edited], timeout=10,
                         what="the hand-edited label put back")  # fmt: skip
        print(f"\nhand-edited label put back in {time.monotonic() - edit_at:.2f} s")
        assert any(edited in c.root_patches for c in named_clients), "put back by the one named"

        victim = next(
            n
            for n, r in replicas.items()
            if r.manager.is_leader() == victim_leads and n in owners.values()
        )
        moved = {c for c, o in owners.items() if o == victim}
        cut = time.monotonic()
        for cut_off in clients_of(replicas[victim]):  # its Leases' and sharder's clients too
            cut_off.partitioned = True

        def taken_over() -> bool:
            return all(owner(plane, c) not in (None, victim) for c in moved)

        await eventually(taken_over, timeout=LEASE + 5, what="the victim's clusters taken over")
        assert time.monotonic() - cut <= LEASE + 5
        # The new owners reconcile them: scale one of the moved clusters and see it converge.
        target = sorted(moved)[0]
        await plane.edit(
            RAY_CLUSTERS, NS, target, lambda rc: rc["spec"]["workerGroupSpecs"][0].update(replicas=3)
        )
        await eventually(
            lambda: len(plane.ray_pods(NS, target)) == 4, timeout=20, what="the moved cluster scaled"
        )
        with pytest.raises(LeadershipLost):  # or MembershipLost, whichever lapsed first
            await stacks[victim].aclose()  # it stopped reconciling when its Lease lapsed

    passes = recorded(tmp_path)
    assert {p.replica for p in passes} == {"r0", "r1", "r2"}
    assert overlaps(passes) == []
    assert Replica.pod_creates == CLUSTERS * (1 + WORKERS) + 1


def scale_all(rc: dict[str, Any]) -> None:
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = WORKERS + 1


async def test_a_joining_replica_gets_its_share_through_drains_and_a_leaving_one_hands_over(
    tmp_path: Path,
) -> None:
    Replica.pod_creates = 0
    async with open_control_plane() as plane, contextlib.AsyncExitStack() as stack:
        stacks = {n: contextlib.AsyncExitStack() for n in ("r0", "r1", "r2")}
        for name in ("r0", "r1"):
            await stack.enter_async_context(stacks[name])
            await stacks[name].enter_async_context(replica(plane, name, tmp_path))
        await create_clusters(plane)
        await eventually(lambda: all_converged(plane), timeout=60, what="every RayCluster ready")
        assert {owner(plane, f"c{i}") for i in range(CLUSTERS)} <= {"r0", "r1"}

        await stack.enter_async_context(stacks["r2"])
        await stacks["r2"].enter_async_context(replica(plane, "r2", tmp_path))

        def settled_on_three() -> bool:
            names = [f"c{i}" for i in range(CLUSTERS)]
            drained = all(
                KEYS.drain not in (plane.stored(RAY_CLUSTERS, NS, c) or {})["metadata"]["labels"]
                for c in names
            )
            return drained and {owner(plane, c) for c in names} == {"r0", "r1", "r2"}

        await eventually(settled_on_three, timeout=30, what="r2 given its share after drains")
        for i in range(CLUSTERS):
            await plane.edit(RAY_CLUSTERS, NS, f"c{i}", scale_all)
        await eventually(
            lambda: all(len(plane.ray_pods(NS, f"c{i}")) == 2 + WORKERS for i in range(CLUSTERS)),
            timeout=60,
            what="every cluster scaled by its new owner",
        )
        moved = {f"c{i}" for i in range(CLUSTERS) if owner(plane, f"c{i}") == "r2"}
        await stacks["r2"].aclose()  # a graceful stop releases its Lease: no wait for expiry
        await eventually(
            lambda: all(owner(plane, c) in ("r0", "r1") for c in moved),
            timeout=5,
            what="r2's clusters back on r0 and r1",
        )
        await eventually(lambda: all_converged(plane), timeout=30, what="every cluster ready")

    passes = recorded(tmp_path)
    assert {p.replica for p in passes} == {"r0", "r1", "r2"}
    assert overlaps(passes) == []
    assert Replica.pod_creates == CLUSTERS * (2 + WORKERS), "no duplicate pod creates"


async def test_a_fleet_made_without_sharding_is_adopted_with_no_duplicate_pod(
    tmp_path: Path,
) -> None:
    """RayClusters made by one replica without --sharding: their pods and services carry no
    shard label. Sharded replicas started after it stop adopt them (the sharder finds a
    reconciled root's objects by ownerReferences and labels them before the root), so no pod
    is created twice, and the new owners go on reconciling them."""
    Replica.pod_creates = 0
    async with open_control_plane() as plane, contextlib.AsyncExitStack() as stack:

        def client(config: KubeConfig) -> KubeClient:
            return Replica(config, qps=-1)

        await plane.namespace(LEASES_NS)
        async with open_operator(
            plane, concurrency=2, leader_election_namespace=LEASES_NS, client_factory=client
        ):
            await create_clusters(plane)
            await eventually(lambda: all_converged(plane), timeout=60, what="ready unsharded")
        before = Replica.pod_creates
        assert before == CLUSTERS * (1 + WORKERS)
        pods = plane.ray_pods(NS, "c0")
        assert all(KEYS.shard not in (p["metadata"].get("labels") or {}) for p in pods)

        for name in ("r0", "r1"):
            await stack.enter_async_context(replica(plane, name, tmp_path))

        def adopted() -> bool:
            names = [f"c{i}" for i in range(CLUSTERS)]
            return all(owner(plane, c) in ("r0", "r1") for c in names) and all(
                (p["metadata"].get("labels") or {}).get(KEYS.shard) == owner(plane, c)
                for c in names
                for p in plane.ray_pods(NS, c)
            )

        await eventually(adopted, timeout=30, what="every cluster and its pods adopted")
        await eventually(lambda: all_converged(plane), timeout=30, what="ready sharded")
        assert Replica.pod_creates == before, "no pod created again by the adopting replicas"
        for i in range(CLUSTERS):
            await plane.edit(RAY_CLUSTERS, NS, f"c{i}", scale_all)
        await eventually(
            lambda: all(len(plane.ray_pods(NS, f"c{i}")) == 2 + WORKERS for i in range(CLUSTERS)),
            timeout=60,
            what="every adopted cluster scaled by its owner",
        )
        await eventually(lambda: all_converged(plane), timeout=30, what="ready once scaled")
        # A create is counted when its answer arrives, after the plane stored the pod.
        await eventually(lambda: Replica.pod_creates >= before + CLUSTERS, timeout=5)
        assert Replica.pod_creates == before + CLUSTERS

    passes = recorded(tmp_path)
    assert {p.replica for p in passes} == {"r0", "r1"}
    assert overlaps(passes) == []
