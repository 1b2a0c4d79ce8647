"""The manager keeps its controllers' passes and serves them on its metrics server
(``/debug/decisions``), as ``rayop run`` and ``rayop up`` do."""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp

from rayop.kube.client import KubeClient
from rayop.kube.resources import CONFIGMAPS
from rayop.runtime.controller import Controller
from rayop.runtime.decisions import note_wait
from rayop.runtime.informers.sources import for_
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reconcile import Request, Result
from rayop.testing import eventually, open_control_plane


async def test_the_metrics_server_serves_the_passes_of_the_managers_controllers() -> None:
    async with open_control_plane(crds=False) as plane:
        await plane.client.create(CONFIGMAPS, {"metadata": {"name": "one"}}, namespace="default")
        async with KubeClient(plane.config, qps=-1) as client:
            manager = Manager(
                client,
                metrics=OperatorMetrics(),
                metrics_bind_address="127.0.0.1:0",
                health_probe_bind_address="0",
                leader_election=False,
            )

            async def reconcile(request: Request) -> Result:
                note_wait(f"nothing to wait for on {request.name}")
                return Result(requeue_after=60.0)

            informer = manager.informers.informer(CONFIGMAPS)
            manager.add_controller(
                Controller(
                    "configmaps",
                    reconcile,
                    sources=[for_(informer)],
                    metrics=manager.metrics,
                    decisions=manager.decisions,
                    kind="ConfigMap",
                )
            )
            task = asyncio.create_task(manager.run())
            try:
                await eventually(lambda: len(manager.decisions) > 0, what="a pass kept")
                assert manager.metrics_server is not None
                url = f"http://127.0.0.1:{manager.metrics_server.port}/debug/decisions"
                query = {"namespace": "default", "name": "one", "kind": "ConfigMap"}
                async with aiohttp.ClientSession() as session, session.get(url, params=query) as r:
                    assert r.status == 200
                    body = await r.json()
            finally:
                await manager.stop()
                with contextlib.suppress(BaseException):
                    await task
    (served,) = body["passes"]
    assert served["controller"] == "configmaps" and served["outcome"] == "requeue_after"
    assert served["waited"] == ["nothing to wait for on one"] and served["nextIn"] == 60.0
