"""Test helper: an HTTPS API server whose kubelet side is a small ContainerExecutor, and kubectl.

The executor plays a process-running kubelet: every pod it was told about gets a
:class:`ContainerProcessEnv` (env, a working directory, mounts under a temporary directory, a
loopback pod IP); any other pod's containers are "not running". kubectl runs as a subprocess
of the test's own event loop (``asyncio.create_subprocess_exec``), so the server keeps serving.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from rayop.sim.apiserver.app import build_app
from rayop.sim.apiserver.audit import Audit
from rayop.sim.apiserver.faults import Faults
from rayop.sim.apiserver.kubeconfig import kubeconfig_document
from rayop.sim.apiserver.tls import generate_self_signed, server_ssl_context
from rayop.sim.nodes.container_exec import CONTAINER_EXECUTOR_KEY, ContainerProcessEnv
from rayop.sim.storage.store import Store

KUBECTL = "/usr/bin/kubectl"
TOKEN = "streaming-test-token"


@dataclass
class TableExecutor:
    """A ContainerExecutor answering from a table: pod name -> its process environment."""

    envs: dict[str, ContainerProcessEnv] = field(default_factory=dict)

    def process_env(self, pod: Mapping[str, Any], container: str) -> ContainerProcessEnv | None:
        """Returns the pod's environment when it is in the table (any container)."""
        return self.envs.get(str(pod["metadata"]["name"]))


@dataclass
class StreamingServer:
    """A running server: where kubectl finds it, its executor, a client for creating pods."""

    kubeconfig: Path
    home: Path
    executor: TableExecutor
    session: aiohttp.ClientSession
    url: str

    async def create_pod(
        self, name: str, *containers: str, node: str = "node-1", phase: str = "Running"
    ) -> None:
        """Creates a pod with the named containers, bound to ``node`` ("" leaves it unbound)."""
        spec: dict[str, Any] = {
            "containers": [{"name": c, "image": "rayproject/ray"} for c in containers]
        }
        if node:
            spec["nodeName"] = node
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
        pods = f"{self.url}/api/v1/namespaces/default/pods"
        async with self.session.post(pods, json=body) as r:
            assert r.status == 201, await r.text()
        if phase:
            patch = {"status": {"phase": phase}}
            headers = {"Content-Type": "application/merge-patch+json"}
            url = f"{pods}/{name}/status"
            async with self.session.patch(url, json=patch, headers=headers) as r:
                assert r.status == 200, await r.text()

    def env(self, **extra: str) -> dict[str, str]:
        """The environment kubectl runs with."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(KUBECONFIG=str(self.kubeconfig), HOME=str(self.home), **extra)
        return env

    async def kubectl(
        self,
        *args: str,
        stdin: bytes | None = None,
        timeout: float = 30,
        env: Mapping[str, str] | None = None,
    ) -> tuple[int, str, str]:
        """Runs kubectl to its end; returns (exit code, stdout, stderr)."""
        proc = await asyncio.create_subprocess_exec(
            KUBECTL, *args, env=self.env(**(env or {})),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()


@asynccontextmanager
async def open_streaming_server(
    tmp: Path, faults: Faults | None = None
) -> AsyncIterator[StreamingServer]:
    """Serves build_app over HTTPS on loopback with a TableExecutor set; yields the server."""
    executor = TableExecutor()
    store = Store(graceful_pod_deletion=False, seed=7)
    app = build_app(store, token=TOKEN, faults=faults or Faults(seed=3), audit=Audit())
    app[CONTAINER_EXECUTOR_KEY] = executor
    material = generate_self_signed(tmp / "tls")
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5,
                           handler_cancellation=True)  # fmt: skip
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl_context(material))
    await site.start()
    url = f"https://127.0.0.1:{runner.addresses[0][1]}"
    kubeconfig = tmp / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump(kubeconfig_document(url, TOKEN, ca_data=material.ca_data)))
    home = tmp / "home"
    home.mkdir()
    ssl_ctx = ssl.create_default_context(cafile=str(material.cert_path))
    session = aiohttp.ClientSession(
        headers={"Authorization": f"Bearer {TOKEN}"},
        connector=aiohttp.TCPConnector(ssl=ssl_ctx),
    )
    try:
        yield StreamingServer(kubeconfig, home, executor, session, url)
    finally:
        await session.close()
        await runner.cleanup()
