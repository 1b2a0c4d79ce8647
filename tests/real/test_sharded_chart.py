"""rayop's chart with three replicas, by real Helm on the real tier: sharding (issue 30).

The chart is installed with ``replicas: 3`` (which turns ``--sharding`` on); three ``rayop run``
processes are started with the installed Deployment's args, each with its own stand-in pod name
for ``$(POD_NAME)`` (Kubernetes expands it from the downward-API env the chart renders) and only
the chart's RBAC (a service-account token, as in tests/real/test_rayop_chart.py). RayClusters
are created at once; once the first half is assigned, while the second half is being
created, the replica that runs the sharder (and owns a third of the first half) is killed with
SIGKILL. Then:

- every RayCluster the killed replica owned is owned by a surviving replica within the Lease
  duration (15 s) plus 5 s of the kill, plus a second per 20 of them (the survivors' client
  rate bounds the relabelling); the RayClusters created after the kill are all owned too, and
  every RayCluster converges;
- the pods created equal the pods asked for (a watch on the namespace counts every pod
  ADDED): 0 duplicate pod creates;
- the replicas' pass records (``--pass-record``) show no two replicas reconciling one key at
  the same time;
- no replica's log shows a Forbidden answer.

``RAYOP_SHARDED_CHART_CLUSTERS`` sets the number of RayClusters and ``RAYOP_SHARDED_CHART_WORKERS``
their workers each (default 2). The default, 200 x 2 (600 pods), keeps the real tier inside CI's
time budget; the issue's 1,000 x 3 (4,000 pods, figures in docs/operations.md) is
``RAYOP_SHARDED_CHART_CLUSTERS=1000 RAYOP_SHARDED_CHART_WORKERS=3``. The real tier's three kwok
nodes hold 1,000 pods each; a fleet of more than 2,000 pods gets kwok nodes of its own for the
test's length (:func:`nodes_for`), so that every pod can be scheduled.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rayop.cli.realcluster import KWOK_NODE_ANNOTATION
from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError, TransportError
from rayop.kube.resources import LEASES, NODES, PODS, RAY_CLUSTERS
from rayop.runtime.sharding.pass_record import overlaps, read_passes
from rayop.testing import eventually, raycluster_converged

from .real_support import create_namespace, unique_namespace, user_client
from .test_rayop_chart import (  # helpers only: no test of that module is imported
    DEPLOYMENTS,
    free_port,
    helm,
    helm_release,
    operator_process,
    service_account_kubeconfig,
    tail,
    wait_ready,
)

__all__ = ["helm"]  # the fixture, re-exported for this module's tests

pytestmark = [pytest.mark.real, pytest.mark.timeout(1800, func_only=True)]

CLUSTERS = int(os.environ.get("RAYOP_SHARDED_CHART_CLUSTERS", "200"))
WORKERS = int(os.environ.get("RAYOP_SHARDED_CHART_WORKERS", "2"))
REPLICAS = ("rayop-sharded-0", "rayop-sharded-1", "rayop-sharded-2")
LEASE_DURATION = 15.0
SHARD = "rayop.io/shard"


def owned_again_bound(moved: int) -> float:
    """The issue's bound (the Lease duration plus 5 s) plus a margin for the relabelling of the
    killed replica's ``moved`` roots (a patch per object, then the root) on a loaded machine:
    20 roots a second, a quarter of what the sharder's own budget (--sharder-qps 500) allows.
    At 1,000 x 2, alone: 180 roots owned again 18.2 s after the kill."""
    return LEASE_DURATION + 5 + moved / 20


Obj = dict[str, Any]

NODE_PODS = 1000
"""Pods a kwok node of the real tier holds (``rayop.cli.realcluster``'s nodes, and these)."""


@contextlib.asynccontextmanager
async def nodes_for(client: KubeClient, pods: int, name: str) -> AsyncIterator[list[str]]:
    """Adds kwok nodes for a fleet of ``pods`` beyond 2,000 (the real tier's three nodes hold
    3,000, and other tests' pods may stay on them), so that every pod can be scheduled; deletes
    them on exit (their pods then go with the fleet's namespace)."""
    extra = math.ceil(pods / NODE_PODS) - 2 if pods > 2 * NODE_PODS else 0
    names = [f"{name}-{i}" for i in range(extra)]
    for node in names:
        capacity = {"cpu": "1000", "memory": "4Ti", "pods": str(NODE_PODS)}
        await client.create(NODES, {
            "metadata": {"name": node, "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": node}},
            "status": {"allocatable": capacity, "capacity": capacity},
        })  # fmt: skip
    try:
        yield names
    finally:
        for node in names:
            with contextlib.suppress(ApiError):
                await client.delete(NODES, node)


def raycluster(name: str) -> Obj:
    container = {"image": "rayproject/ray:2.46.0", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", **container}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "w",
                    "replicas": WORKERS,
                    "minReplicas": 0,
                    "maxReplicas": WORKERS,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-worker", **container}]}},
                }
            ],
        },
    }


class PodCreates:
    """Counts every pod ADDED to a namespace from a resourceVersion on (a watch, resumed
    after a dropped connection from the last version seen)."""

    def __init__(self, client: KubeClient, namespace: str, resource_version: str) -> None:
        self.uids: set[str] = set()
        self._client, self._namespace, self._rv = client, namespace, resource_version

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TransportError):
                async with self._client.watch(
                    PODS, namespace=self._namespace, resource_version=self._rv,
                    timeout_seconds=3600,
                ) as events:  # fmt: skip
                    async for event in events:
                        meta = event.object.get("metadata") or {}
                        self._rv = str(meta.get("resourceVersion") or self._rv)
                        if event.type == "ADDED":
                            self.uids.add(str(meta.get("uid")))


async def all_converged(client: KubeClient, namespace: str) -> int:
    """Returns how many RayClusters of ``namespace`` are ready with all their pods."""
    clusters = (await client.list(RAY_CLUSTERS, namespace=namespace))["items"]
    pods: dict[str, list[Obj]] = {}
    for pod in (await client.list(PODS, namespace=namespace))["items"]:
        if not pod["metadata"].get("deletionTimestamp"):
            cluster = (pod["metadata"].get("labels") or {}).get("ray.io/cluster", "")
            pods.setdefault(cluster, []).append(pod)
    return sum(raycluster_converged(rc, pods.get(rc["metadata"]["name"], [])) for rc in clusters)


async def owners(client: KubeClient, namespace: str) -> dict[str, str | None]:
    clusters = (await client.list(RAY_CLUSTERS, namespace=namespace))["items"]
    return {
        rc["metadata"]["name"]: (rc["metadata"].get("labels") or {}).get(SHARD) for rc in clusters
    }


async def sharder_holder(client: KubeClient, namespace: str) -> str:
    """Returns the replica id whose process runs the sharder (``<id>_<uuid>`` holds its Lease)."""
    try:
        lease = await client.get(LEASES, "ray-operator-leader-sharder", namespace=namespace)
    except ApiError:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "").rpartition("_")[0]


async def test_chart_with_three_replicas_shards_the_fleet_and_survives_a_killed_replica(
    helm: Path, real_kubeconfig: str, tmp_path: Path
) -> None:
    async with user_client(real_kubeconfig) as client:
        release_ns = await create_namespace(client, unique_namespace("rayop-sharded"))
        fleet = await create_namespace(client, unique_namespace("fleet"))
        release = f"rayop-{release_ns.rsplit('-', 1)[1]}"
        values = {
            "replicas": 3, "fullnameOverride": release, "serviceAccount": {"name": release},
            # The operator's own pods stay Pending (these processes stand in for them): the
            # three kwok nodes hold 1,000 pods each, all needed by the fleet.
            "nodeSelector": {"rayop.io/no-such-node": "true"},
            # The fleet's namespace only: the real tier's other tests leave their RayClusters,
            # RayJobs and RayServices in namespaces of their own, which the replicas would
            # otherwise assign and reconcile too.
            "watchNamespace": [fleet],
        }  # fmt: skip
        async with helm_release(helm, real_kubeconfig, release, release_ns, values), \
                nodes_for(client, CLUSTERS * (1 + WORKERS), fleet), \
                contextlib.AsyncExitStack() as stack:  # fmt: skip
            (deployment,) = (await client.list(DEPLOYMENTS, namespace=release_ns))["items"]
            assert deployment["spec"]["replicas"] == 3
            container = deployment["spec"]["template"]["spec"]["containers"][0]
            assert "--replica-id=$(POD_NAME)" in container["args"]
            kubeconfig = await service_account_kubeconfig(
                client, real_kubeconfig, release_ns, release, tmp_path / "sa-kubeconfig"
            )
            procs: dict[str, asyncio.subprocess.Process] = {}
            logs: dict[str, Path] = {}
            for replica in REPLICAS:
                probe = free_port()
                args = [a.replace("$(POD_NAME)", replica) for a in container["args"]]
                args += [
                    f"--metrics-addr=127.0.0.1:{free_port()}",
                    f"--health-probe-bind-address=127.0.0.1:{probe}",
                    f"--leader-election-namespace={release_ns}",
                    f"--pass-record={tmp_path / replica}.jsonl",
                ]
                argv = [sys.executable, "-m", "rayop", *container["command"][1:], *args]
                logs[replica] = tmp_path / f"{replica}.log"
                procs[replica] = await stack.enter_async_context(
                    operator_process(argv, kubeconfig, logs[replica])
                )
                await wait_ready(procs[replica], probe, logs[replica])

            listed = await client.list(PODS, namespace=fleet)
            creates = PodCreates(client, fleet, listed["metadata"]["resourceVersion"])
            counting = asyncio.create_task(creates.run())
            try:
                semaphore = asyncio.Semaphore(32)

                async def create(i: int) -> None:
                    async with semaphore:
                        await client.create(RAY_CLUSTERS, raycluster(f"rc-{i}"), namespace=fleet)

                half = CLUSTERS // 2
                started = time.monotonic()
                await asyncio.gather(*(create(i) for i in range(half)))
                victims: list[str] = []

                async def elected() -> bool:
                    victims.append(await sharder_holder(client, release_ns))
                    return victims[-1] in procs

                await eventually(elected, timeout=LEASE_DURATION + 5, interval=0.2,
                                 what="a replica elected to run the sharder")  # fmt: skip
                victim = victims[-1]

                async def first_half_owned() -> bool:
                    found = await owners(client, fleet)
                    return len(found) == half and None not in found.values()

                await eventually(first_half_owned, timeout=120, interval=0.5,
                                 what="the first half assigned")  # fmt: skip
                held = {n for n, o in (await owners(client, fleet)).items() if o == victim}
                assert held, "the victim owns some"
                procs[victim].kill()  # SIGKILL during creation: no Lease released
                killed = time.monotonic()
                await procs[victim].wait()
                creating = asyncio.gather(*(create(i) for i in range(half, CLUSTERS)))
                survivors = set(REPLICAS) - {victim}

                async def owned_by_survivors(names: set[str] | None) -> bool:
                    found = await owners(client, fleet)
                    if names is not None:
                        return {found.get(n) for n in names} <= survivors
                    return len(found) == CLUSTERS and set(found.values()) <= survivors

                await eventually(
                    lambda: owned_by_survivors(held),
                    timeout=owned_again_bound(len(held)) + 120, interval=0.25,
                    what="the killed replica's RayClusters owned by a surviving replica",
                )  # fmt: skip
                owned_after = time.monotonic() - killed
                await creating
                await eventually(
                    lambda: owned_by_survivors(None), timeout=120, interval=0.5,
                    what="every RayCluster owned by a surviving replica",
                )  # fmt: skip
                all_owned = time.monotonic() - killed

                async def ready() -> bool:
                    for replica in survivors:
                        if procs[replica].returncode is not None:
                            pytest.fail(f"{replica} exited:\n{tail(logs[replica])}")
                    return await all_converged(client, fleet) == CLUSTERS

                await eventually(ready, timeout=1500, interval=2, what="every RayCluster ready")
                all_ready = time.monotonic() - started
                await asyncio.sleep(2)  # late duplicate creates, if any, would show now
            finally:
                counting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await counting
            print(
                f"\n{CLUSTERS} x {WORKERS} workers on 3 replicas (one SIGKILLed):"
                f" all ready in {all_ready:.1f} s; its {len(held)} owned again"
                f" {owned_after:.1f} s after the kill; all {CLUSTERS} owned {all_owned:.1f} s"
                f" after it; pods created {len(creates.uids)}"
            )
            assert owned_after <= owned_again_bound(len(held)), (owned_after, len(held))
            assert len(creates.uids) == CLUSTERS * (1 + WORKERS), "0 duplicate pod creates"
            shares = await owners(client, fleet)
            assert set(shares.values()) == survivors, ("the survivors share the fleet", shares)
            for replica in survivors:
                procs[replica].send_signal(signal.SIGTERM)
                assert await asyncio.wait_for(procs[replica].wait(), 30) == 0, tail(logs[replica])

    passes = list(read_passes([tmp_path / f"{replica}.jsonl" for replica in REPLICAS]))
    assert survivors <= {p.replica for p in passes} <= set(REPLICAS)
    assert overlaps(passes) == []
    for replica, log in logs.items():
        text = log.read_text()
        forbidden = [ln for ln in text.splitlines() if "Forbidden" in ln]
        assert not forbidden, (replica, forbidden[:5])
