"""``pods/portforward``: relays each forwarded connection to a TCP port on the pod's address.

Over SPDY (raw, or tunnelled in a WebSocket as kubectl 1.31+ does) the client opens two
streams per connection, sharing a ``requestID`` header: ``streamType: error`` and
``streamType: data``, both with the ``port`` header. Once both are open the server dials
the pod's port (``pod_ip:port``, or a simulated head's listener) and copies bytes both ways; a
half-close travels as FIN in both directions. A dial failure is written on the error stream,
in the kubelet's words, and both streams are reset (kubectl prints it, closes the connection
and ends: "lost connection to pod").
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from rayop.sim.apiserver.streaming.spdy_session import SpdySession, SpdyStream
from rayop.sim.nodes.container_exec import ContainerProcessEnv

__all__ = ["PORTFORWARD_PROTOCOL", "serve_port_forward_session"]

PORTFORWARD_PROTOCOL = "portforward.k8s.io"
STREAM_PAIR_TIMEOUT = 30.0
READ_SIZE = 32 * 1024


class _Pair:
    def __init__(self) -> None:
        self.data: SpdyStream | None = None
        self.error: SpdyStream | None = None


def dial_error(err: OSError, env: ContainerProcessEnv, port: int, pod: str, uid: str) -> str:
    """Returns the kubelet's message for a port the pod does not listen on (``err`` from the
    dial)."""
    reason = os.strerror(err.errno) if err.errno else str(err)
    return (
        f"error forwarding port {port} to pod {pod}, uid {uid}: failed to connect to "
        f"{env.pod_ip}:{port} inside the pod's network namespace, error: dial tcp4 "
        f"{env.pod_ip}:{port}: connect: {reason.lower()}"
    )


async def _stream_to_socket(stream: SpdyStream, writer: asyncio.StreamWriter) -> None:
    while data := await stream.read():
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        with contextlib.suppress(OSError):
            writer.write_eof()


async def _socket_to_stream(reader: asyncio.StreamReader, stream: SpdyStream) -> None:
    while data := await reader.read(READ_SIZE):
        await stream.write(data)
    await stream.close()


async def _forward(pair: _Pair, env: ContainerProcessEnv, pod: str, uid: str) -> None:
    data, error = pair.data, pair.error
    assert data is not None and error is not None
    port_text = data.header("port")
    try:
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError(port_text)
    except ValueError:
        await error.write(f'unable to parse "{port_text}" as a port'.encode())
        await data.reset()
        await error.reset()
        return
    try:
        reader, writer = await env.connect(port)
    except OSError as err:
        await error.write(dial_error(err, env, port, pod, uid).encode())
        await data.reset()
        await error.reset()
        return
    try:
        await asyncio.gather(_stream_to_socket(data, writer), _socket_to_stream(reader, data))
    except (ConnectionError, OSError):
        await data.reset()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        await error.close()


async def serve_port_forward_session(
    session: SpdySession, env: ContainerProcessEnv, pod: str, uid: str
) -> None:
    """Serves the client's stream pairs until the session ends."""
    pairs: dict[str, _Pair] = {}
    tasks: set[asyncio.Task[None]] = set()
    try:
        while (stream := await session.accept()) is not None:
            kind = stream.header("streamType")
            request_id = stream.header("requestID")
            if not request_id:
                offset = 0 if kind == "error" else 2
                request_id = str(stream.stream_id - offset)
            pair = pairs.setdefault(request_id, _Pair())
            if kind == "data" and pair.data is None:
                pair.data = stream
            elif kind == "error" and pair.error is None:
                pair.error = stream
            else:
                await stream.write(
                    f"error processing stream for request {request_id}: unexpected or "
                    f'duplicate stream type "{kind}"'.encode()
                )
                await stream.reset()
                continue
            if pair.data is not None and pair.error is not None:
                del pairs[request_id]
                task = asyncio.create_task(_forward(pair, env, pod, uid))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
    finally:
        for task in list(tasks):
            task.cancel()
        for task in list(tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
