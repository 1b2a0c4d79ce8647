"""``rayop run`` refuses to start a replica of one sharding mode beside a live replica of the
other, says why, and is not fooled by a Lease a crashed replica left behind."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from rayop.controllers.assembly.operator_settings import OperatorSettings, ShardingSettings
from rayop.controllers.assembly.shard_fence import check_shard_fence
from rayop.controllers.assembly.sharding import KEYS
from rayop.controllers.config.startup_checks import StartupCheckError
from rayop.kube.client import KubeClient
from rayop.kube.resources import LEASES
from rayop.testing import FakeClock, PlaneUnderTest, open_control_plane

UNSHARDED = OperatorSettings(leader_election_namespace="default")
SHARDED = OperatorSettings(
    leader_election_namespace="default", sharding=ShardingSettings(replica_id="r0")
)


async def write_lease(client: KubeClient, name: str, holder: str, labels: dict[str, str]) -> None:
    """Creates the Lease, or renews it (a new renewTime) when it exists."""
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseDurationSeconds": 15}
    try:
        lease = await client.get(LEASES, name, namespace="default")
    except Exception:
        first = "2026-01-01T00:00:00.000000Z"
        body = {"metadata": {"name": name, "labels": labels}, "spec": {**spec, "renewTime": first}}
        await client.create(LEASES, body, namespace="default")
        return
    renewed = datetime.fromisoformat(lease["spec"]["renewTime"]) + timedelta(seconds=1)
    lease["spec"] = {**spec, "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    await client.update(LEASES, lease)


async def check(plane: PlaneUnderTest, settings: OperatorSettings, *, renew: str | None) -> None:
    """Runs the check; while it watches, renews the Lease ``renew`` (if any), then lets the
    Lease duration pass."""
    clock = FakeClock()
    checking = asyncio.create_task(check_shard_fence(plane.client, settings, clock=clock))
    for _ in range(200):
        if clock.has_sleepers() or checking.done():
            break
        await asyncio.sleep(0.01)
    if renew is not None:
        labels = {KEYS.lease: "true"} if renew.startswith(KEYS.lease_prefix) else {}
        await write_lease(plane.client, renew, "someone", labels)
    clock.step(30)
    await checking


async def test_nothing_else_running_starts_either_mode_at_once() -> None:
    async with open_control_plane(crds=False) as plane:
        await check(plane, UNSHARDED, renew=None)
        await check(plane, SHARDED, renew=None)


async def test_an_unsharded_replica_refuses_to_start_beside_a_live_sharded_one() -> None:
    async with open_control_plane(crds=False) as plane:
        name = UNSHARDED.leader_election_id + "-sharder"
        await write_lease(plane.client, name, "r1_x", {})
        with pytest.raises(StartupCheckError, match=r"started with --sharding are running"):
            await check(plane, UNSHARDED, renew=name)
        await check(plane, UNSHARDED, renew=None)  # the same Lease, no longer renewed: crashed


async def test_a_sharded_replica_refuses_to_start_while_an_unsharded_one_leads() -> None:
    async with open_control_plane(crds=False) as plane:
        name = UNSHARDED.leader_election_id
        await write_lease(plane.client, name, "host_1", {})
        with pytest.raises(StartupCheckError, match="a replica without --sharding leads"):
            await check(plane, SHARDED, renew=name)
        await check(plane, SHARDED, renew=None)
