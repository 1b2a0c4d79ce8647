"""``pods/exec`` over WebSocket: the ``channel.k8s.io`` protocols kubectl 1.30+ speaks by default.

Every message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize (JSON
``{"Width": w, "Height": h}``). ``v5.channel.k8s.io`` adds the CLOSE signal (``255, channel``)
with which the client ends stdin; ``v4`` writes the final Status as JSON on the error channel,
the older ``channel.k8s.io`` only a failure's message. The ``base64.`` variants send text
messages whose channel is an ASCII digit and whose data is base64. As kube-apiserver does, an
empty message on the lowest output channel tells the client the streams are ready, and the
connection closes after the Status.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web

from rayop.sim.apiserver.streaming.channel_frames import ChannelSocket
from rayop.sim.apiserver.streaming.exec_process import ExecOptions
from rayop.sim.apiserver.streaming.exec_session import run_exec, status_text
from rayop.sim.nodes.container_exec import ContainerProcessEnv

__all__ = ["EXEC_WEBSOCKET_PROTOCOLS", "serve_exec_websocket"]

EXEC_WEBSOCKET_PROTOCOLS = (
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
)
"""The subprotocols served, in the server's order (the client's order decides)."""

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


class _Channels(ChannelSocket):
    """Reads client messages into stdin and resize queues; writes output channels."""

    def __init__(self, ws: web.WebSocketResponse, protocol: str, options: ExecOptions) -> None:
        super().__init__(ws, base64_frames="base64" in protocol)
        self.stream_close = protocol == "v5.channel.k8s.io"
        self.options = options
        self.stdin: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.resize: asyncio.Queue[tuple[int, int] | None] = asyncio.Queue()

    async def stdout(self, data: bytes) -> None:
        await self.send(STDOUT, data)

    async def stderr(self, data: bytes) -> None:
        await self.send(STDERR, data)

    def _dispatch(self, frame: bytes) -> None:
        if not frame:
            return
        if self.stream_close and frame[0] == CLOSE:
            if len(frame) == 2 and frame[1] == STDIN:
                self.stdin.put_nowait(None)
            return
        channel, data = frame[0], frame[1:]
        if channel == STDIN and self.options.stdin:
            self.stdin.put_nowait(data)
        elif channel == RESIZE and self.options.tty:
            with contextlib.suppress(orjson.JSONDecodeError, TypeError, ValueError, KeyError):
                size = orjson.loads(data)
                self.resize.put_nowait((int(size["Width"]), int(size["Height"])))

    async def read_loop(self) -> None:
        """Dispatches client messages until the client closes the connection."""
        try:
            async for frame in self.frames():
                self._dispatch(frame)
        finally:
            self.stdin.put_nowait(None)
            self.resize.put_nowait(None)

    async def stdin_chunks(self) -> AsyncIterator[bytes]:
        while (data := await self.stdin.get()) is not None:
            yield data

    async def resize_events(self) -> AsyncIterator[tuple[int, int]]:
        while (size := await self.resize.get()) is not None:
            yield size


async def serve_exec_websocket(
    request: web.Request, env: ContainerProcessEnv, options: ExecOptions
) -> web.WebSocketResponse:
    """Upgrades the request, runs the command, writes the Status and closes the connection."""
    ws = web.WebSocketResponse(protocols=EXEC_WEBSOCKET_PROTOCOLS, autoping=True)
    await ws.prepare(request)
    protocol = ws.ws_protocol or "channel.k8s.io"
    channels = _Channels(ws, protocol, options)
    first = STDOUT if options.stdout else STDERR if options.stderr else ERROR
    await channels.send(first, b"")
    async with channels.reading():
        status: dict[str, Any] = await run_exec(
            env,
            options,
            stdout=channels.stdout,
            stderr=channels.stderr,
            stdin=channels.stdin_chunks(),
            resizes=channels.resize_events(),
        )
        if protocol.startswith(("v4.", "v5.")):
            await channels.send(ERROR, orjson.dumps(status))
        elif text := status_text(status):
            await channels.send(ERROR, text.encode())
        await ws.close()
    return ws
