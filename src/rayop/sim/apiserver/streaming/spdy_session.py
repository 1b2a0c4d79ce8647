"""A server-side SPDY/3.1 session: the streams a client opens over one upgraded connection.

The session does not know what carries its bytes: a :class:`FrameLink` sends them (the raw
upgraded HTTP connection, or the binary messages of a WebSocket tunnel) and whoever reads the
carrier calls :meth:`SpdySession.feed` and :meth:`SpdySession.feed_eof`. Each client
SYN_STREAM is answered with a SYN_REPLY and handed out by :meth:`SpdySession.accept`; PINGs are
answered; a GOAWAY or the end of the carrier ends the session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping

from rayop.sim.apiserver.streaming import spdy_frames as sf

__all__ = ["FrameLink", "SpdySession", "SpdyStream"]

CHUNK = 32 * 1024
"""The largest data frame written (kubectl's peers use 32 KiB too)."""

FrameLink = Callable[[bytes], Awaitable[None]]
"""Sends bytes to the client, in order (raises ConnectionError once the carrier is gone)."""


class SpdyStream:
    """One stream a client opened: its headers, what it sent, and a way to answer."""

    def __init__(self, session: SpdySession, stream_id: int, headers: Mapping[str, str]) -> None:
        """Keeps the stream's identity (headers keyed by lowercase name)."""
        self.session = session
        self.stream_id = stream_id
        self.headers = dict(headers)
        self._incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._remote_done = False
        self.local_closed = False

    def header(self, name: str) -> str:
        """Returns a header of the SYN_STREAM ("" when absent)."""
        return self.headers.get(name.lower(), "")

    def _deliver(self, data: bytes | None) -> None:
        if not self._remote_done:
            self._incoming.put_nowait(data)
            if data is None:
                self._remote_done = True

    async def read(self) -> bytes:
        """Returns the next data the client sent on this stream; b"" once it closed or reset."""
        data = await self._incoming.get()
        if data is None:
            self._incoming.put_nowait(None)
            return b""
        return data

    async def write(self, data: bytes) -> None:
        """Sends ``data`` on this stream (nothing once it is closed)."""
        if self.local_closed:
            return
        for start in range(0, len(data), CHUNK):
            await self.session.send(sf.data_frame(self.stream_id, data[start : start + CHUNK]))

    async def close(self) -> None:
        """Half-closes this stream (an empty data frame with FIN); idempotent."""
        if not self.local_closed:
            self.local_closed = True
            await self.session.send(sf.data_frame(self.stream_id, b"", fin=True))

    async def reset(self) -> None:
        """Ends this stream abruptly (RST_STREAM CANCEL)."""
        if not self.local_closed:
            self.local_closed = True
            await self.session.send(sf.rst_stream_frame(self.stream_id))
        self._deliver(None)


class SpdySession:
    """The server side of one SPDY/3.1 connection."""

    def __init__(self, link: FrameLink) -> None:
        """Starts a session sending through ``link``."""
        self._link = link
        self._reader = sf.FrameReader()
        self._codec = sf.HeaderCodec()
        self._outbox: asyncio.Queue[tuple[bytes, asyncio.Future[None] | None]] = asyncio.Queue()
        self._streams: dict[int, SpdyStream] = {}
        self._accepted: asyncio.Queue[SpdyStream | None] = asyncio.Queue()
        self._last_stream = 0
        self.closed = asyncio.Event()
        self._writer = asyncio.create_task(self._write_loop(), name="spdy-writer")

    async def _write_loop(self) -> None:
        while True:
            frame, done = await self._outbox.get()
            try:
                if not self.closed.is_set() or done is None:
                    await self._link(frame)
            except (ConnectionError, RuntimeError):
                self._end()
            finally:
                if done is not None and not done.done():
                    done.set_result(None)

    def _queue(self, frame: bytes) -> None:
        self._outbox.put_nowait((frame, None))

    async def send(self, frame: bytes) -> None:
        """Sends one frame after every frame queued before it; dropped once the session ended."""
        if self.closed.is_set():
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait((frame, done))
        await done

    def feed(self, data: bytes) -> None:
        """Takes bytes the client sent; dispatches every complete frame (never blocks)."""
        try:
            frames = self._reader.feed(data)
        except ValueError:
            self._queue(sf.goaway_frame(self._last_stream))
            self._end()
            return
        for frame in frames:
            if isinstance(frame, sf.DataFrame):
                stream = self._streams.get(frame.stream_id)
                if stream is not None:
                    if frame.data:
                        stream._deliver(frame.data)
                    if frame.fin:
                        stream._deliver(None)
            else:
                self._control(frame)

    def _control(self, frame: sf.ControlFrame) -> None:
        if frame.kind == sf.SYN_STREAM:
            stream_id = frame.stream_id
            try:
                headers = sf.syn_stream_headers(self._codec, frame)
            except ValueError:
                self._queue(sf.rst_stream_frame(stream_id, sf.RST_PROTOCOL_ERROR))
                return
            stream = SpdyStream(self, stream_id, headers)
            self._streams[stream_id] = stream
            self._last_stream = max(self._last_stream, stream_id)
            self._queue(sf.syn_reply_frame(self._codec, stream_id))
            if frame.flags & sf.FLAG_FIN:
                stream._deliver(None)
            self._accepted.put_nowait(stream)
        elif frame.kind == sf.RST_STREAM:
            reset = self._streams.pop(frame.stream_id, None)
            if reset is not None:
                reset.local_closed = True
                reset._deliver(None)
        elif frame.kind == sf.PING:
            self._queue(sf.ping_frame(frame.stream_id))
        elif frame.kind == sf.GOAWAY:
            self._end()
        # SYN_REPLY, SETTINGS, HEADERS, WINDOW_UPDATE: nothing to do on this side.

    def feed_eof(self) -> None:
        """The carrier ended: every stream ends, :meth:`accept` returns None."""
        self._end()

    def _end(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for stream in self._streams.values():
            stream._deliver(None)
        self._accepted.put_nowait(None)

    async def accept(self) -> SpdyStream | None:
        """Returns the next stream the client opened, or None once the session ended."""
        stream = await self._accepted.get()
        if stream is None:
            self._accepted.put_nowait(None)
        return stream

    async def close(self) -> None:
        """Flushes what is queued, sends GOAWAY and ends the session (the caller closes the carrier)."""
        if not self.closed.is_set():
            await self.send(sf.goaway_frame(self._last_stream))
        self._end()
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer
