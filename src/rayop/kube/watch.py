"""Decoding of watch streams: newline-delimited JSON events arriving in arbitrary chunks.

The API server answers a watch with one ``{"type": ..., "object": {...}}`` JSON object per line
(W1). Chunks from the network may cut a line anywhere, even inside a multi-byte character, so
:class:`WatchDecoder` buffers the unfinished tail until its newline arrives.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from rayop.kube.codec import decode_object
from rayop.kube.errors import ApiError, error_from_response, failure_status, transport_error
from rayop.kube.transport import Transport, retry_after

__all__ = ["WatchDecoder", "WatchEvent", "WatchStream", "decode_events"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event.

    Attributes:
        type: ``ADDED``, ``MODIFIED``, ``DELETED`` or ``BOOKMARK`` (``ERROR`` events are raised
            as :class:`~rayop.kube.errors.ApiError` instead of being yielded).
        object: The object (for BOOKMARK, only ``metadata.resourceVersion`` is meaningful).
    """

    type: str
    object: dict[str, Any]


class WatchDecoder:
    """Splits a byte stream into JSON lines and decodes them; never blocks."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Adds a chunk and returns every complete JSON object it finished, in order.

        Raises:
            ApiError: A complete line is not a JSON object (an InternalError Status).
        """
        self._buffer += chunk
        end = self._buffer.rfind(b"\n")
        if end < 0:
            return []
        complete = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return [_decode_line(line) for line in complete.split(b"\n") if line.strip()]

    def finish(self) -> list[dict[str, Any]]:
        """Decodes whatever remains at the end of the stream (a last line with no newline)."""
        rest = bytes(self._buffer).strip()
        self._buffer.clear()
        return [_decode_line(rest)] if rest else []

    @property
    def pending(self) -> int:
        """Bytes buffered while waiting for the rest of a line."""
        return len(self._buffer)


def _decode_line(line: bytes) -> dict[str, Any]:
    return decode_object(line, what="watch event")


def to_event(raw: dict[str, Any]) -> WatchEvent:
    """Turns a decoded line into a :class:`WatchEvent`; never blocks.

    Raises:
        ApiError: The event is an ERROR event (for example :class:`~rayop.kube.errors.Gone`
            with reason Expired for a too-old resourceVersion), or is malformed.
    """
    kind = raw.get("type")
    obj = raw.get("object")
    if kind == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        raise error_from_response(code if isinstance(code, int) else 500, status or None)
    if not isinstance(kind, str) or not isinstance(obj, dict):
        raise ApiError(failure_status(500, "InternalError", f"malformed watch event: {raw!r:.200}"))
    return WatchEvent(kind, obj)


async def decode_events(chunks: AsyncIterable[bytes]) -> AsyncIterator[WatchEvent]:
    """Yields the events of a stream of byte chunks until it ends; blocks on the stream.

    Raises:
        ApiError: On an ERROR event or an undecodable line.
    """
    decoder = WatchDecoder()
    async for chunk in chunks:
        for raw in decoder.feed(chunk):
            yield to_event(raw)
    for raw in decoder.finish():
        yield to_event(raw)


class WatchStream:
    """The async context manager returned by :meth:`rayop.kube.client.KubeClient.watch`.

    Entering sends the watch request (throttled and retried like any call) and blocks until
    the server accepts it; it raises :class:`~rayop.kube.errors.ApiError` if the server
    refuses. It returns an async iterator of :class:`WatchEvent`. Leaving closes the stream.
    """

    def __init__(self, transport: Transport, path: str, params: Mapping[str, str]) -> None:
        self._transport = transport
        self._path = path
        self._params = dict(params)
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> AsyncIterator[WatchEvent]:
        reply = await self._transport.send("GET", self._path, params=self._params, stream=True)
        if reply.response is None:
            raise error_from_response(
                reply.status, reply.body, method="GET", retry_after=retry_after(reply.headers)
            )
        self._response = reply.response
        return decode_events(_chunks(reply.response))

    async def __aexit__(self, *exc_info: object) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None


async def _chunks(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.content.iter_any():
            yield chunk
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise transport_error(exc, timeout=isinstance(exc, TimeoutError)) from exc
