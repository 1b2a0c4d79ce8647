"""SPDY/3.1 framing and the server session, driven by hand-made client frames."""

from __future__ import annotations

import struct
import zlib

import pytest

from rayop.sim.apiserver.streaming import spdy_frames as sf
from rayop.sim.apiserver.streaming.spdy_session import SpdySession


def test_header_blocks_round_trip_on_one_zlib_stream_per_direction() -> None:
    client, server = sf.HeaderCodec(), sf.HeaderCodec()
    blocks = [client.encode({"streamType": "error", "port": "8265"}), client.encode({"a": "b"})]
    assert server.decode(blocks[0]) == {"streamtype": "error", "port": "8265"}
    assert server.decode(blocks[1]) == {"a": "b"}  # needs the first block's zlib state


def test_the_dictionary_is_spdy3s() -> None:
    assert len(sf.HEADER_DICTIONARY) == 1423
    assert sf.HEADER_DICTIONARY.startswith(b"\x00\x00\x00\x07options")
    assert zlib.adler32(sf.HEADER_DICTIONARY) == 0xE3C6A7C2  # the id zlib streams name it by


def test_frames_are_cut_wherever_the_bytes_split() -> None:
    data = sf.data_frame(3, b"hello", fin=True) + sf.ping_frame(7) + sf.data_frame(5, b"")
    reader = sf.FrameReader()
    frames = [f for i in range(len(data)) for f in reader.feed(data[i : i + 1])]
    assert [type(f).__name__ for f in frames] == ["DataFrame", "ControlFrame", "DataFrame"]
    first = frames[0]
    assert isinstance(first, sf.DataFrame) and first.fin and first.data == b"hello"
    ping = frames[1]
    assert isinstance(ping, sf.ControlFrame) and ping.kind == sf.PING and ping.stream_id == 7


def test_another_spdy_version_is_refused() -> None:
    frame = struct.pack(">HHI", 0x8000 | 2, sf.PING, 4) + b"\x00\x00\x00\x01"
    with pytest.raises(ValueError, match="unsupported SPDY version 2"):
        sf.FrameReader().feed(frame)


async def test_the_session_replies_to_streams_and_pings_and_relays_data() -> None:
    sent = bytearray()

    async def link(frame: bytes) -> None:
        sent.extend(frame)

    session = SpdySession(link)
    client = sf.HeaderCodec()
    session.feed(sf.syn_stream_frame(client, 1, {"streamType": "stdin"}))
    session.feed(sf.data_frame(1, b"input") + sf.data_frame(1, b"", fin=True))
    session.feed(sf.ping_frame(9))
    stream = await session.accept()
    assert stream is not None and stream.header("streamType") == "stdin"
    assert await stream.read() == b"input"
    assert await stream.read() == b""
    await stream.write(b"out")
    await stream.close()
    await session.close()
    frames = sf.FrameReader().feed(bytes(sent))
    kinds = [f.kind if isinstance(f, sf.ControlFrame) else "data" for f in frames]
    assert kinds == [sf.SYN_REPLY, sf.PING, "data", "data", sf.GOAWAY]
    out, fin = frames[2], frames[3]
    assert isinstance(out, sf.DataFrame) and out.data == b"out" and not out.fin
    assert isinstance(fin, sf.DataFrame) and fin.fin and fin.stream_id == 1
    assert await session.accept() is None


async def test_a_client_reset_ends_the_stream_and_a_goaway_the_session() -> None:
    async def link(_frame: bytes) -> None:
        return

    session = SpdySession(link)
    client = sf.HeaderCodec()
    session.feed(sf.syn_stream_frame(client, 1, {"streamType": "data"}))
    stream = await session.accept()
    assert stream is not None
    session.feed(sf.rst_stream_frame(1))
    assert await stream.read() == b""
    session.feed(sf.goaway_frame(1))
    assert session.closed.is_set() and await session.accept() is None
    await session.close()
