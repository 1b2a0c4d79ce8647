"""The manager's event recorders write through a client of their own: same server, same qps
and burst, a token bucket of its own, so events never spend the reconcile client's budget."""

from __future__ import annotations

import asyncio
from typing import Any

from rayop.kube.client import KubeClient
from rayop.kube.resources import CONFIGMAPS, EVENTS
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import open_control_plane


def manager_on(client: KubeClient, **options: Any) -> Manager[KubeClient]:
    """A manager on ``client`` serving nothing over HTTP."""
    return Manager(
        client, metrics=OperatorMetrics(), metrics_bind_address="0",
        health_probe_bind_address="0", **options,
    )  # fmt: skip


async def test_events_go_through_their_own_client_and_bucket() -> None:
    async with (
        open_control_plane(crds=False) as plane,
        KubeClient(plane.config, qps=0.001, burst=5) as client,
    ):
        manager = manager_on(client, leader_election=False)
        recorder = manager.event_recorder("test-controller")
        assert manager.event_recorder("test-controller") is recorder
        own = recorder.client
        assert isinstance(own, KubeClient) and own is not client
        assert own.throttle is not client.throttle
        assert (own.throttle.qps, own.throttle.burst) == (0.001, 5)
        assert manager.event_recorder("other").client is own
        cm = await plane.client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "default"},
            },
        )
        for _ in range(5):  # empties the reconcile bucket: its next token is 1,000 s away
            client.throttle.reserve()
        for reason in ("A", "B", "C"):
            recorder.event(cm, "Normal", reason, "a note")
        async with asyncio.timeout(10):  # the events' bucket still has its 5 tokens
            await recorder.flush()
        events = (await plane.client.list(EVENTS, namespace="default"))["items"]
        assert sorted(e["reason"] for e in events) == ["A", "B", "C"]
        metrics = manager.render_metrics().decode()
        assert (
            'rayop_events_recorded_total{controller="test-controller",type="Normal"} 3.0' in metrics
        )
        await manager_closed(manager)


async def manager_closed(manager: Manager[Any]) -> None:
    """Runs the manager's shutdown path (recorders, then the event client) without running it."""
    manager.request_stop()
    await manager.run()


async def test_leader_election_renews_through_its_own_client_and_bucket() -> None:
    """A renewal never waits behind reconcile writes: with the reconcile bucket empty for
    1,000 s, the Lease is still taken and renewed, through a client of its own (as
    controller-runtime gives leader election its own REST client)."""
    async with (
        open_control_plane(crds=False) as plane,
        KubeClient(plane.config, qps=0.001, burst=5) as client,
    ):
        manager = manager_on(client, leader_election=True, leader_election_namespace="default")
        own = manager.lease_client
        assert isinstance(own, KubeClient) and own is not client
        assert own.throttle is not client.throttle
        assert (own.throttle.qps, own.throttle.burst) == (0.001, 5)
        assert manager.own_clients == (own,)
        for _ in range(5):
            client.throttle.reserve()
        running = asyncio.create_task(manager.run())
        async with asyncio.timeout(10):
            while not manager.is_leader():
                await asyncio.sleep(0.05)
        manager.request_stop()
        await running
    no_election = manager_on(client, leader_election=False)
    assert no_election.lease_client is client and no_election.own_clients == ()


async def test_a_client_of_its_own_may_have_another_budget() -> None:
    """The sharder's client gets a token bucket of its own at the rate it is given (the
    manager's by default), sharing the request metrics; the manager closes it."""
    async with (
        open_control_plane(crds=False) as plane,
        KubeClient(plane.config, qps=100, burst=200) as client,
    ):
        manager = manager_on(client, leader_election=False)
        same = manager.client_of_its_own()
        faster = manager.client_of_its_own(qps=500, burst=1000)
        assert same is not None and faster is not None
        assert (same.throttle.qps, same.throttle.burst) == (100, 200)
        assert (faster.throttle.qps, faster.throttle.burst) == (500, 1000)
        assert faster.metrics is client.metrics
        assert manager.own_clients == (same, faster)
        await manager_closed(manager)
