"""SPDY/3.1 framing: the frames kubectl's streams travel in, and their compressed header blocks.

A frame is either a control frame (the high bit set, version 3, a 16-bit type) or a data frame
(a 31-bit stream id); both carry 8 flag bits and a 24-bit length. Header blocks (in SYN_STREAM,
SYN_REPLY and HEADERS) are a count and length-prefixed name/value pairs, zlib-compressed with
the dictionary the SPDY/3 draft defines (section 2.6.10.1), one zlib stream per direction for
the whole connection. Flow control (WINDOW_UPDATE, SETTINGS) is read and ignored, as the
Kubernetes SPDY peers do.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "FLAG_FIN",
    "ControlFrame",
    "DataFrame",
    "FrameReader",
    "HeaderCodec",
    "data_frame",
    "goaway_frame",
    "ping_frame",
    "rst_stream_frame",
    "syn_reply_frame",
    "syn_stream_frame",
    "syn_stream_headers",
]

VERSION = 3
SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9
FLAG_FIN = 0x01
RST_PROTOCOL_ERROR = 1
RST_CANCEL = 5
MAX_FRAME = 1 << 24

HEADER_DICTIONARY = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03put"
    b"\x00\x00\x00\x06delete\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00\x00\x00\x0eacc"
    b"ept-charset\x00\x00\x00\x0faccept-encoding\x00\x00\x00\x0faccept-language\x00\x00"
    b"\x00\raccept-ranges\x00\x00\x00\x03age\x00\x00\x00\x05allow\x00\x00\x00\rauthorizati"
    b"on\x00\x00\x00\rcache-control\x00\x00\x00\nconnection\x00\x00\x00\x0ccontent-base"
    b"\x00\x00\x00\x10content-encoding\x00\x00\x00\x10content-language\x00\x00\x00\x0econt"
    b"ent-length\x00\x00\x00\x10content-location\x00\x00\x00\x0bcontent-md5\x00\x00\x00\rc"
    b"ontent-range\x00\x00\x00\x0ccontent-type\x00\x00\x00\x04date\x00\x00\x00\x04etag\x00"
    b"\x00\x00\x06expect\x00\x00\x00\x07expires\x00\x00\x00\x04from\x00\x00\x00\x04host"
    b"\x00\x00\x00\x08if-match\x00\x00\x00\x11if-modified-since\x00\x00\x00\rif-none-match"
    b"\x00\x00\x00\x08if-range\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\rlast-modifi"
    b"ed\x00\x00\x00\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00\x00"
    b"\x00\x12proxy-authenticate\x00\x00\x00\x13proxy-authorization\x00\x00\x00\x05range"
    b"\x00\x00\x00\x07referer\x00\x00\x00\x0bretry-after\x00\x00\x00\x06server\x00\x00\x00"
    b"\x02te\x00\x00\x00\x07trailer\x00\x00\x00\x11transfer-encoding\x00\x00\x00\x07upgrad"
    b"e\x00\x00\x00\nuser-agent\x00\x00\x00\x04vary\x00\x00\x00\x03via\x00\x00\x00\x07warn"
    b"ing\x00\x00\x00\x10www-authenticate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00\x00"
    b"\x00\x06status\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1"
    b"\x00\x00\x00\x03url\x00\x00\x00\x06public\x00\x00\x00\nset-cookie\x00\x00\x00\nkeep-"
    b"alive\x00\x00\x00\x06origin100101201202205206300302303304305306307402405406407408409"
    b"410411412413414415416417502504505203 Non-Authoritative Information204 No Content301 "
    b"Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Intern"
    b"al Server Error501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul"
    b" Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/ht"
    b"ml,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,te"
    b"xt/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,"
    b"utf-,*,enq=0."
)
"""The SPDY/3 header-compression dictionary (1423 bytes), a constant of the protocol."""


@dataclass(frozen=True)
class ControlFrame:
    """A decoded control frame: its type, flags and payload (header blocks still compressed)."""

    kind: int
    flags: int
    payload: bytes

    @property
    def stream_id(self) -> int:
        """The stream id most control frames start with (31 bits)."""
        return int(struct.unpack_from(">I", self.payload)[0]) & 0x7FFFFFFF


@dataclass(frozen=True)
class DataFrame:
    """A decoded data frame."""

    stream_id: int
    flags: int
    data: bytes

    @property
    def fin(self) -> bool:
        """True when the sender closed its side of the stream with this frame."""
        return bool(self.flags & FLAG_FIN)


@dataclass
class FrameReader:
    """Cuts a byte stream into frames (bytes may arrive split anywhere)."""

    _buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[ControlFrame | DataFrame]:
        """Adds bytes; returns every frame now complete.

        Raises:
            ValueError: A control frame of another SPDY version.
        """
        self._buffer.extend(data)
        frames: list[ControlFrame | DataFrame] = []
        while len(self._buffer) >= 8:
            first, second = struct.unpack_from(">II", self._buffer)
            length = second & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            flags = second >> 24
            if first & 0x80000000:
                version = (first >> 16) & 0x7FFF
                if version != VERSION:
                    raise ValueError(f"unsupported SPDY version {version}")
                frames.append(ControlFrame(first & 0xFFFF, flags, payload))
            else:
                frames.append(DataFrame(first & 0x7FFFFFFF, flags, payload))
        return frames


class HeaderCodec:
    """Compresses outgoing and decompresses incoming header blocks of one connection."""

    def __init__(self) -> None:
        """Starts both zlib streams with the SPDY dictionary."""
        self._out = zlib.compressobj(
            zlib.Z_BEST_COMPRESSION,
            zlib.DEFLATED,
            15,
            8,
            zlib.Z_DEFAULT_STRATEGY,
            HEADER_DICTIONARY,
        )
        self._in = zlib.decompressobj(zdict=HEADER_DICTIONARY)

    def encode(self, headers: Mapping[str, str]) -> bytes:
        """Returns the compressed block for ``headers`` (names lowercased)."""
        raw = bytearray(struct.pack(">I", len(headers)))
        for name, value in headers.items():
            for part in (name.lower().encode(), value.encode()):
                raw += struct.pack(">I", len(part)) + part
        return self._out.compress(bytes(raw)) + self._out.flush(zlib.Z_SYNC_FLUSH)

    def decode(self, block: bytes) -> dict[str, str]:
        """Returns the headers of a compressed block (several values of a name joined by ",").

        Raises:
            ValueError: A block that does not decompress or parse.
        """
        try:
            raw = self._in.decompress(block)
        except zlib.error as err:
            raise ValueError(f"bad SPDY header block: {err}") from err
        try:
            (count,) = struct.unpack_from(">I", raw)
            pos, headers = 4, {}
            for _ in range(count):
                parts: list[str] = []
                for _ in range(2):
                    (size,) = struct.unpack_from(">I", raw, pos)
                    parts.append(raw[pos + 4 : pos + 4 + size].decode())
                    pos += 4 + size
                headers[parts[0]] = parts[1].replace("\x00", ",")
        except (struct.error, UnicodeDecodeError) as err:
            raise ValueError(f"bad SPDY header block: {err}") from err
        return headers


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, *, fin: bool = False) -> bytes:
    """Returns a data frame (at most 16 MiB - 1 of data)."""
    flags = FLAG_FIN if fin else 0
    return struct.pack(">II", stream_id & 0x7FFFFFFF, (flags << 24) | len(data)) + data


def syn_stream_frame(codec: HeaderCodec, stream_id: int, headers: Mapping[str, str]) -> bytes:
    """Returns a SYN_STREAM opening ``stream_id`` (what a client sends; used by tests)."""
    payload = struct.pack(">IIH", stream_id, 0, 0) + codec.encode(headers)
    return _control(SYN_STREAM, 0, payload)


def syn_reply_frame(codec: HeaderCodec, stream_id: int) -> bytes:
    """Returns the SYN_REPLY accepting ``stream_id`` (with no headers)."""
    return _control(SYN_REPLY, 0, struct.pack(">I", stream_id) + codec.encode({}))


def rst_stream_frame(stream_id: int, status: int = RST_CANCEL) -> bytes:
    """Returns a RST_STREAM ending ``stream_id`` abruptly."""
    return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))


def ping_frame(ping_id: int) -> bytes:
    """Returns a PING (a received one is answered with the same id)."""
    return _control(PING, 0, struct.pack(">I", ping_id))


def goaway_frame(last_stream_id: int) -> bytes:
    """Returns a GOAWAY (status OK) naming the last stream the sender accepted."""
    return _control(GOAWAY, 0, struct.pack(">II", last_stream_id, 0))


def syn_stream_headers(codec: HeaderCodec, frame: ControlFrame) -> dict[str, str]:
    """Returns the headers of a SYN_STREAM frame (its block starts at byte 10)."""
    return codec.decode(frame.payload[10:])
