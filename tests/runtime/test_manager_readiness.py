"""Awaiting a manager's readiness: :meth:`Manager.wait_ready` returns once the caches synced,
and raises what stopped the manager when it never got there."""

from __future__ import annotations

import asyncio
import errno
import socket

import pytest

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resources import CONFIGMAPS
from rayop.runtime.manager import Manager, ManagerStopped
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.serving.endpoints import BindError
from rayop.sim.controlplane import EmbeddedControlPlane


def _manager(client: KubeClient, **kwargs: object) -> Manager[KubeClient]:
    manager: Manager[KubeClient] = Manager(
        client,
        metrics=OperatorMetrics(),
        leader_election=False,
        metrics_bind_address=str(kwargs.pop("metrics_bind_address", "0")),
        health_probe_bind_address="0",
    )
    manager.informers.informer(CONFIGMAPS)
    return manager


async def test_wait_ready_returns_once_the_caches_synced_and_at_once_after() -> None:
    async with EmbeddedControlPlane() as cp, KubeClient(KubeConfig.for_server(cp.url, token=cp.token)) as client:
        manager = _manager(client)
        assert manager.client is client
        task = asyncio.create_task(manager.run())
        await asyncio.wait_for(manager.wait_ready(), 10)
        assert manager.is_ready()
        await asyncio.wait_for(manager.wait_ready(), 0.1)  # already ready: no wait
        manager.request_stop()
        await task


async def test_wait_ready_raises_what_the_manager_failed_with_before_it_was_ready() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        client = KubeClient(KubeConfig.for_server("http://127.0.0.1:9"))
        async with client:
            manager = _manager(client, metrics_bind_address=f"127.0.0.1:{port}")
            task = asyncio.create_task(manager.run())
            with pytest.raises(BindError) as failed:
                await asyncio.wait_for(manager.wait_ready(), 10)
            with pytest.raises(OSError):
                await task
    # The error names the server and the address, so that a command can name its flag.
    assert (failed.value.server, failed.value.host, failed.value.port) == (
        "metrics",
        "127.0.0.1",
        port,
    )
    assert failed.value.errno == errno.EADDRINUSE


async def test_wait_ready_raises_manager_stopped_when_stopped_before_the_caches_synced() -> None:
    client = KubeClient(KubeConfig.for_server("http://127.0.0.1:9"))  # nothing listens: no sync
    async with client:
        manager = _manager(client)
        task = asyncio.create_task(manager.run())
        waiting = asyncio.create_task(manager.wait_ready())
        await asyncio.sleep(0)
        manager.request_stop()
        with pytest.raises(ManagerStopped):
            await asyncio.wait_for(waiting, 10)
        await asyncio.wait_for(task, 10)
