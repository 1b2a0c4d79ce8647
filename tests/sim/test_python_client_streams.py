"""The Python kubernetes client's ``stream()`` exec and ``portforward`` (WebSocket v4 channels).

The client is synchronous (websocket-client in this thread), so each call runs in a worker
thread while the server keeps serving on the test's event loop.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client, config
from kubernetes.stream import portforward, stream

from rayop.sim.nodes.container_exec import ContainerProcessEnv

from .streaming_server import StreamingServer, open_streaming_server

POD_IP = "127.0.0.3"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[StreamingServer]:
    async with open_streaming_server(tmp_path) as srv:
        srv.executor.envs["head"] = ContainerProcessEnv(
            env={"PATH": "/usr/bin:/bin", "GREETING": "hi"}, cwd=str(tmp_path), pod_ip=POD_IP,
            mounts={},
        )  # fmt: skip
        await srv.create_pod("head", "ray-head")
        yield srv


def _core(server: StreamingServer) -> tuple[Any, Any]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))  # type: ignore[no-untyped-call]  # kubernetes.config is untyped
    return api_client, client.CoreV1Api(api_client)


def _exec(server: StreamingServer, command: list[str], stdin: str | None) -> tuple[str, str, int]:
    api_client, core = _core(server)
    try:
        resp = stream(
            core.connect_get_namespaced_pod_exec, "head", "default", command=command,
            stdin=stdin is not None, stdout=True, stderr=True, tty=False,
            _preload_content=False,
        )  # fmt: skip
        if stdin is not None:
            resp.write_stdin(stdin)
        resp.run_forever(timeout=20)
        assert not resp.is_open()  # the server closed it after the Status
        out, err = resp.read_stdout(timeout=0), resp.read_stderr(timeout=0)
        code = resp.returncode
        resp.close()
        resp.sock.shutdown()  # websocket-client leaves the socket open once the server closed
        return out, err, int(code)
    finally:
        api_client.close()


async def test_stream_exec_reports_output_and_the_exit_code(server: StreamingServer) -> None:
    out, err, code = await asyncio.to_thread(
        _exec, server, ["sh", "-c", "echo $GREETING; echo bad >&2; exit 5"], None
    )
    assert (out, err, code) == ("hi\n", "bad\n", 5)
    out, _, code = await asyncio.to_thread(_exec, server, ["head", "-c", "5"], "abcdefgh")
    assert (out, code) == ("abcde", 0)


def _fetch_through_portforward(server: StreamingServer, port: int) -> bytes:
    api_client, core = _core(server)
    try:
        pf = portforward(
            core.connect_get_namespaced_pod_portforward, "head", "default", ports=str(port)
        )
        sock = pf.socket(port)
        sock.setblocking(True)
        sock.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
        sock.close()
        error = pf.error(port)
        pf.close()
        for thread in threading.enumerate():  # the client's proxy thread owns the WebSocket
            if thread.name.startswith("Kubernetes port forward proxy"):
                thread.join(timeout=20)
        pf.websocket.shutdown()  # closed by the server already: only the socket is left
        assert error is None, error
        return b"".join(chunks)
    finally:
        api_client.close()


async def test_portforward_relays_to_the_pod_ip(server: StreamingServer) -> None:
    async def version(_request: web.Request) -> web.Response:
        return web.json_response({"ray_version": "2.60.0"})

    app = web.Application()
    app.router.add_get("/api/version", version)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    with socket.socket() as s:
        s.bind((POD_IP, 0))
        port = int(s.getsockname()[1])
    await web.TCPSite(runner, POD_IP, port).start()
    try:
        reply = await asyncio.to_thread(_fetch_through_portforward, server, port)
    finally:
        await runner.cleanup()
    assert reply.startswith(b"HTTP/1.1 200 OK"), reply
    assert reply.endswith(b'{"ray_version": "2.60.0"}'), reply
