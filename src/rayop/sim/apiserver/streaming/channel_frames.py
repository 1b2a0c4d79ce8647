"""The frames of the WebSocket channel protocol (``*.channel.k8s.io``), in both encodings.

A frame is a channel number and data: a binary message ``[channel] + data``, or, under a
``base64`` subprotocol, a text message of the digit ``'0' + channel`` and the data in base64.
A text message under a binary subprotocol is read as its UTF-8 bytes, as Go's websocket does.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
from collections.abc import AsyncIterator

from aiohttp import WSMsgType, web


class ChannelSocket:
    """A server WebSocket that carries channel frames."""

    def __init__(self, ws: web.WebSocketResponse, *, base64_frames: bool) -> None:
        self.ws = ws
        self.base64 = base64_frames
        self._send_lock = asyncio.Lock()

    async def send(self, channel: int, data: bytes) -> None:
        """Writes one frame; nothing once the connection is closed or failing."""
        if self.ws.closed:
            return
        async with self._send_lock:
            with contextlib.suppress(ConnectionError, RuntimeError):
                if self.base64:
                    text = chr(ord("0") + channel) + base64.b64encode(data).decode()
                    await self.ws.send_str(text)
                else:
                    await self.ws.send_bytes(bytes([channel]) + data)

    async def read_loop(self) -> None:
        """Reads the client's frames until the client closes; each protocol routes them."""
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """Runs :meth:`read_loop` in a task while the block runs; cancels it when it ends."""
        reader = asyncio.create_task(self.read_loop())
        try:
            yield
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def frames(self) -> AsyncIterator[bytes]:
        """Yields each non-empty client frame as ``[channel] + data`` until the client closes;
        a frame that does not decode is skipped."""
        async for msg in self.ws:
            frame = b""
            if msg.type == WSMsgType.BINARY and not self.base64:
                frame = msg.data
            elif msg.type == WSMsgType.TEXT and not self.base64:
                frame = msg.data.encode()
            elif msg.type == WSMsgType.TEXT and self.base64 and msg.data:
                with contextlib.suppress(binascii.Error, ValueError):
                    channel = ord(msg.data[0]) - ord("0")
                    frame = bytes([channel]) + base64.b64decode(msg.data[1:])
            if frame:
                yield frame
