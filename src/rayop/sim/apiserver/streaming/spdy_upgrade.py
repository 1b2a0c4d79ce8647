"""Opening a SPDY session: on the raw upgraded HTTP connection, or tunnelled in a WebSocket.

kubectl falls back to ``Upgrade: SPDY/3.1`` when WebSocket is refused (and client-go's SPDY
executors use it directly): the server negotiates a subprotocol through
``X-Stream-Protocol-Version`` (the first the client lists that the server serves), answers
``101 Switching Protocols`` and from then on the connection carries SPDY frames. aiohttp only
hands over the connection for WebSocket, so the handler writes the 101 itself and installs a
payload parser that feeds every later byte to the session.

kubectl 1.31+ port-forwards through a WebSocket whose subprotocol is ``SPDY/3.1+<protocol>``
(kube-apiserver's stream tunnel): the binary messages carry the SPDY bytes, split anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from aiohttp import WSMsgType, web

from rayop.sim.apiserver.streaming.spdy_session import SpdySession
from rayop.sim.machinery import errors as se

__all__ = [
    "SPDY_TUNNEL_PREFIX",
    "negotiate",
    "open_raw_spdy",
    "open_tunnelled_spdy",
    "requested_protocols",
]

SPDY_TUNNEL_PREFIX = "SPDY/3.1+"
PROTOCOL_HEADER = "X-Stream-Protocol-Version"


def requested_protocols(request: web.Request) -> list[str]:
    """Returns the subprotocols the client offers in ``X-Stream-Protocol-Version``."""
    offered: list[str] = []
    for value in request.headers.getall(PROTOCOL_HEADER, []):
        offered.extend(p.strip() for p in value.split(",") if p.strip())
    return offered


def negotiate(request: web.Request, served: Sequence[str]) -> str:
    """Returns the first offered protocol served ("" when the client offered none).

    Raises:
        StatusError: 403 when the client offered protocols and none is served.
    """
    offered = requested_protocols(request)
    if not offered:
        return ""
    for protocol in offered:
        if protocol in served:
            return protocol
    message = (
        f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
        f"server supports {list(served)}"
    )
    raise se.StatusError(se.status_body(403, "Forbidden", message))


class _UpgradedResponse(web.StreamResponse):
    """The 101 answer; once the connection carries SPDY nothing more is written to it."""

    async def write_eof(self, data: bytes = b"") -> None:
        return


class _FeedParser:
    """Stands in for aiohttp's payload parser: every byte after the 101 goes to the session."""

    def __init__(self, session: SpdySession) -> None:
        self._session = session

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._session.feed(data)
        return False, b""

    def feed_eof(self) -> None:
        self._session.feed_eof()


@asynccontextmanager
async def open_raw_spdy(
    request: web.Request, protocol: str
) -> AsyncIterator[tuple[SpdySession, web.StreamResponse]]:
    """Answers 101 with ``protocol``, yields the session; closes the connection at exit."""
    transport, handler = request.transport, request.protocol
    if transport is None:
        raise ConnectionResetError("the client went away before the upgrade")
    headers = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
    if protocol:
        headers[PROTOCOL_HEADER] = protocol
    response = _UpgradedResponse(status=101, headers=headers)
    await response.prepare(request)

    async def link(frame: bytes) -> None:
        if transport.is_closing():
            raise ConnectionResetError("the connection is closed")
        transport.write(frame)
        drain = getattr(handler, "_drain_helper", None)
        if drain is not None:
            await drain()

    session = SpdySession(link)
    handler.set_parser(_FeedParser(session))  # type: ignore[arg-type]
    try:
        yield session, response
    finally:
        await session.close()
        transport.close()


@asynccontextmanager
async def open_tunnelled_spdy(
    request: web.Request, ws_protocol: str
) -> AsyncIterator[tuple[SpdySession, web.StreamResponse]]:
    """Accepts the WebSocket with ``ws_protocol``, yields the session carried in its messages."""
    ws = web.WebSocketResponse(protocols=(ws_protocol,), autoping=True)
    await ws.prepare(request)

    async def link(frame: bytes) -> None:
        if ws.closed:
            raise ConnectionResetError("the WebSocket is closed")
        await ws.send_bytes(frame)

    session = SpdySession(link)

    async def read_loop() -> None:
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    session.feed(msg.data)
        finally:
            session.feed_eof()

    reader = asyncio.create_task(read_loop())
    try:
        yield session, ws
    finally:
        await session.close()
        await ws.close()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
