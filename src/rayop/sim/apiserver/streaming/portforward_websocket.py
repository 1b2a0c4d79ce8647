"""``pods/portforward`` over the WebSocket channel protocol (``v4.channel.k8s.io``).

Clients that do not tunnel SPDY (the Python kubernetes client's ``portforward``, older
client-go) name the ports in the query (``?ports=8265,6379``) and get two channels per port,
in order: data (``2i``) and error (``2i+1``). As the kubelet does, the server first writes each
port as two little-endian bytes on both of its channels, then dials the pod's port
(:meth:`ContainerProcessEnv.connect`) once per port and relays; a dial failure is written on the error channel. The connection closes when
every port's relay has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct

from aiohttp import web

from rayop.sim.apiserver.streaming.channel_frames import ChannelSocket
from rayop.sim.apiserver.streaming.portforward import dial_error
from rayop.sim.machinery import errors as se
from rayop.sim.nodes.container_exec import ContainerProcessEnv

__all__ = ["PORTFORWARD_WEBSOCKET_PROTOCOLS", "requested_ports", "serve_port_forward_websocket"]

PORTFORWARD_WEBSOCKET_PROTOCOLS = ("v4.channel.k8s.io", "v4.base64.channel.k8s.io")
READ_SIZE = 32 * 1024


def requested_ports(request: web.Request) -> list[int]:
    """Returns the ports of the ``ports`` query parameters (repeated or comma-separated).

    Raises:
        StatusError: 400 in the kubelet's words when none is given or one is not a port.
    """
    values = request.query.getall("ports", [])
    if not values:
        raise se.bad_request('query parameter "ports" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise se.bad_request('query parameter "ports" cannot be empty')
        for part in value.split(","):
            try:
                port = int(part)
                if not 0 <= port < 65536:
                    raise ValueError(part)
            except ValueError:
                raise se.bad_request(f'unable to parse "{value}" as a port') from None
            if port < 1:
                raise se.bad_request(f'port "{value}" must be > 0')
            ports.append(port)
    return ports


class _Relay(ChannelSocket):
    """The channels of one WebSocket and the sockets behind its ports."""

    def __init__(self, ws: web.WebSocketResponse, ports: list[int]) -> None:
        super().__init__(ws, base64_frames=(ws.ws_protocol or "").startswith("v4.base64."))
        self.ports = ports
        self.inbound: list[asyncio.Queue[bytes | None]] = [asyncio.Queue() for _ in ports]

    async def read_loop(self) -> None:
        try:
            async for frame in self.frames():
                if frame[0] % 2 == 0 and frame[0] // 2 < len(self.ports):
                    self.inbound[frame[0] // 2].put_nowait(frame[1:])
        finally:
            for queue in self.inbound:
                queue.put_nowait(None)

    async def forward(self, index: int, env: ContainerProcessEnv, pod: str, uid: str) -> None:
        port = self.ports[index]
        try:
            reader, writer = await env.connect(port)
        except OSError as err:
            await self.send(2 * index + 1, dial_error(err, env, port, pod, uid).encode())
            return

        async def outbound() -> None:
            while data := await reader.read(READ_SIZE):
                await self.send(2 * index, data)

        async def inbound() -> None:
            while (data := await self.inbound[index].get()) is not None:
                writer.write(data)
                await writer.drain()

        out, into = asyncio.create_task(outbound()), asyncio.create_task(inbound())
        try:
            await asyncio.wait({out, into}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (out, into):
                task.cancel()
            await asyncio.gather(out, into, return_exceptions=True)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def serve_port_forward_websocket(
    request: web.Request, env: ContainerProcessEnv, pod: str, uid: str
) -> web.WebSocketResponse:
    """Accepts the WebSocket, announces each port, relays until every port's relay ended."""
    ports = requested_ports(request)
    ws = web.WebSocketResponse(protocols=PORTFORWARD_WEBSOCKET_PROTOCOLS, autoping=True)
    await ws.prepare(request)
    relay = _Relay(ws, ports)
    for index, port in enumerate(ports):
        announce = struct.pack("<H", port)
        await relay.send(2 * index, announce)
        await relay.send(2 * index + 1, announce)
    async with relay.reading():
        await asyncio.gather(*(relay.forward(i, env, pod, uid) for i in range(len(ports))))
        await ws.close()
    return ws
