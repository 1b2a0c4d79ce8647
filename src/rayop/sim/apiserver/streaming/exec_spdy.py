"""``pods/exec`` over SPDY: the streams kubectl opens when WebSocket is not used.

The client negotiates ``v4.channel.k8s.io`` (or v3, v2, the unversioned ``channel.k8s.io``)
and opens one stream per channel, each named by its ``streamType`` header: ``error``,
``stdin``, ``stdout``, ``stderr`` and, with a tty from v3 on, ``resize`` (a stream of JSON
sizes). The command starts once every expected stream is open (at most 30 s, as the kubelet
waits); the output streams are half-closed when it ended, then v4 writes the Status as JSON on
the error stream (older protocols only a failure's message) and the connection closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import orjson
from aiohttp import web

from rayop.sim.apiserver.streaming.exec_process import ExecOptions
from rayop.sim.apiserver.streaming.exec_session import run_exec, status_text
from rayop.sim.apiserver.streaming.spdy_session import SpdySession, SpdyStream
from rayop.sim.apiserver.streaming.spdy_upgrade import negotiate, open_raw_spdy
from rayop.sim.nodes.container_exec import ContainerProcessEnv

__all__ = ["EXEC_SPDY_PROTOCOLS", "serve_exec_spdy"]

EXEC_SPDY_PROTOCOLS = (
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
)
STREAM_CREATION_TIMEOUT = 30.0


def _expected(options: ExecOptions, protocol: str) -> set[str]:
    kinds = {"error"}
    for kind, wanted in (("stdin", options.stdin), ("stdout", options.stdout)):
        if wanted:
            kinds.add(kind)
    if options.stderr:
        kinds.add("stderr")
    if options.tty and protocol in ("v4.channel.k8s.io", "v3.channel.k8s.io"):
        kinds.add("resize")
    return kinds


async def _collect(session: SpdySession, expected: set[str]) -> dict[str, SpdyStream] | None:
    streams: dict[str, SpdyStream] = {}
    while not expected <= streams.keys():
        stream = await session.accept()
        if stream is None:
            return None
        streams[stream.header("streamType")] = stream
    return streams


async def _chunks(stream: SpdyStream) -> AsyncIterator[bytes]:
    while data := await stream.read():
        yield data


async def _sizes(stream: SpdyStream) -> AsyncIterator[tuple[int, int]]:
    decoder = size_decoder()
    async for data in _chunks(stream):
        for size in decoder(data):
            yield size


def size_decoder() -> Callable[[bytes], list[tuple[int, int]]]:
    """Returns a decoder of concatenated ``{"Width":..,"Height":..}`` objects, split anywhere."""
    buffer = bytearray()

    def feed(data: bytes) -> list[tuple[int, int]]:
        buffer.extend(data)
        sizes: list[tuple[int, int]] = []
        while (end := buffer.find(b"}")) >= 0:
            chunk, buffer[:] = bytes(buffer[: end + 1]), buffer[end + 1 :]
            with contextlib.suppress(orjson.JSONDecodeError, TypeError, ValueError, KeyError):
                size = orjson.loads(chunk)
                sizes.append((int(size["Width"]), int(size["Height"])))
        return sizes

    return feed


async def serve_exec_spdy(
    request: web.Request, env: ContainerProcessEnv, options: ExecOptions
) -> web.StreamResponse:
    """Upgrades to SPDY, waits for the streams, runs the command, reports its Status."""
    protocol = negotiate(request, EXEC_SPDY_PROTOCOLS)
    async with open_raw_spdy(request, protocol) as (session, response):
        try:
            streams = await asyncio.wait_for(
                _collect(session, _expected(options, protocol)), STREAM_CREATION_TIMEOUT
            )
        except TimeoutError:
            return response
        if streams is None:
            return response
        stdout, stderr = streams.get("stdout"), streams.get("stderr")
        stdin, resize = streams.get("stdin"), streams.get("resize")

        async def nowhere(_data: bytes) -> None:
            return

        status = await run_exec(
            env,
            options,
            stdout=stdout.write if stdout is not None else nowhere,
            stderr=stderr.write if stderr is not None else nowhere,
            stdin=_chunks(stdin) if stdin is not None else None,
            resizes=_sizes(resize) if resize is not None else None,
        )
        for stream in (stdout, stderr):
            if stream is not None:
                await stream.close()
        error = streams["error"]
        if protocol == "v4.channel.k8s.io":
            await error.write(orjson.dumps(status))
        elif text := status_text(status):
            await error.write(text.encode())
        await error.close()
    return response
