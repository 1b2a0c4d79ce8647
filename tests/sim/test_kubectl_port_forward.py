"""The real kubectl port-forwards to a server listening on a pod's loopback address.

Over the WebSocket tunnel (``SPDY/3.1+portforward.k8s.io``, kubectl's default since 1.31) and
over SPDY/3.1 (``KUBECTL_PORT_FORWARD_WEBSOCKETS=false``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from rayop.sim.nodes.container_exec import ContainerProcessEnv

from .streaming_server import KUBECTL, StreamingServer, open_streaming_server

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")

POD_IP = "127.0.0.2"
BIG = bytes(range(256)) * 3000 + b"tail"  # ~750 KiB, many SPDY frames
TRANSPORTS = {
    "websocket": {},
    "spdy": {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"},
}


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> dict[str, str]:
    return dict(TRANSPORTS[request.param])


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def dashboard() -> AsyncIterator[int]:
    """An HTTP server on the pod IP, standing in for a Ray head's dashboard; yields its port."""

    async def version(_request: web.Request) -> web.Response:
        return web.json_response({"ray_version": "2.60.0"})

    async def big(_request: web.Request) -> web.Response:
        return web.Response(body=BIG)

    async def upload(request: web.Request) -> web.Response:
        return web.Response(body=await request.read())

    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.router.add_get("/api/version", version)
    app.router.add_get("/big", big)
    app.router.add_post("/echo", upload)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port(POD_IP)
    site = web.TCPSite(runner, POD_IP, port)
    await site.start()
    try:
        yield port
    finally:
        await runner.cleanup()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[StreamingServer]:
    async with open_streaming_server(tmp_path) as srv:
        srv.executor.envs["head"] = ContainerProcessEnv(
            env={"PATH": "/usr/bin:/bin"}, cwd=str(tmp_path), pod_ip=POD_IP, mounts={}
        )
        await srv.create_pod("head", "ray-head")
        yield srv


async def _forwarding(
    server: StreamingServer, remote: int, transport: dict[str, str]
) -> tuple[asyncio.subprocess.Process, int]:
    local = free_port()
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "port-forward", "pod/head", f"{local}:{remote}",
        env=server.env(**transport), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 20)
    assert line.startswith(f"Forwarding from 127.0.0.1:{local} -> {remote}".encode()), line
    return proc, local


async def _stop(proc: asyncio.subprocess.Process) -> bytes:
    if proc.returncode is None:
        proc.terminate()
    await proc.wait()
    assert proc.stderr is not None
    return await proc.stderr.read()


async def test_port_forward_relays_http_both_ways(
    server: StreamingServer, dashboard: int, transport: dict[str, str]
) -> None:
    proc, local = await _forwarding(server, dashboard, transport)
    try:
        base = f"http://127.0.0.1:{local}"
        async with aiohttp.ClientSession() as http:
            for _ in range(3):  # one forwarded connection per session request set
                async with http.get(f"{base}/api/version") as r:
                    assert await r.json() == {"ray_version": "2.60.0"}
            async with http.get(f"{base}/big") as r:
                assert await r.read() == BIG
            async with http.post(f"{base}/echo", data=BIG) as r:
                assert await r.read() == BIG

        # several connections at once, each on its own stream pair
        async def one() -> object:
            async with aiohttp.ClientSession() as http, http.get(f"{base}/api/version") as r:
                return await r.json()

        assert await asyncio.gather(*(one() for _ in range(5))) == [{"ray_version": "2.60.0"}] * 5
    finally:
        await _stop(proc)


async def test_a_refused_port_is_reported_in_the_kubelet_words_and_kubectl_stops(
    server: StreamingServer, dashboard: int, transport: dict[str, str]
) -> None:
    closed = free_port(POD_IP)
    proc, local = await _forwarding(server, closed, transport)
    try:
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientError):
                async with http.get(f"http://127.0.0.1:{local}/") as r:
                    await r.read()
        # client-go ends the forward on the error by itself: wait for that rather than stop
        # kubectl before it has printed its last words (a loaded machine takes a while).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 30)
    finally:
        err = (await _stop(proc)).decode()
    assert f"error forwarding port {closed} to pod head" in err, err
    assert "connect: connection refused" in err, err
    assert "lost connection to pod" in err, err  # client-go ends the forward on an error
