"""One ``pods/exec`` run, whatever carries it: pumps stdio and reports the kubelet's final Status.

The transports (WebSocket channels, SPDY streams) hand in where stdout and stderr go, where
stdin and terminal sizes come from; :func:`run_exec` starts the process, relays until it exited
and its output ended, and returns the Status the kubelet writes on the error channel:
``Success``, ``NonZeroExitCode`` with the code as the ``ExitCode`` cause (kubectl prints
``command terminated with exit code N`` and exits N), or ``InternalError`` when the command
could not start.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from rayop.sim.apiserver.streaming.exec_process import (
    ExecOptions,
    ExecStartError,
    LocalProcess,
    start_process,
)
from rayop.sim.nodes.container_exec import ContainerProcessEnv

__all__ = [
    "Sink",
    "exit_status",
    "internal_error_status",
    "run_exec",
    "status_text",
    "success_status",
]

Sink = Callable[[bytes], Awaitable[None]]
"""Sends output to the client."""


def success_status() -> dict[str, Any]:
    """The Status of a command that exited 0."""
    return {"metadata": {}, "status": "Success"}


def _go_list(command: Sequence[str]) -> str:
    return "[" + " ".join(command) + "]"


def exit_status(command: Sequence[str], code: int) -> dict[str, Any]:
    """The Status of a command that exited ``code`` != 0 (containerd's wording in the message)."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        f"{_go_list(command)}, exit code {code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def internal_error_status(message: str) -> dict[str, Any]:
    """The Status of a command that failed to run (the kubelet's InternalError)."""
    cause = f"error executing command in container: {message}"
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {cause}",
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    }


def status_text(status: dict[str, Any]) -> str:
    """What the pre-v4 protocols write on the error channel: the message of a failure, or ""."""
    return "" if status.get("status") == "Success" else str(status.get("message", ""))


async def _pump_output(chunks: AsyncIterator[bytes], sink: Sink) -> None:
    async for data in chunks:
        await sink(data)


async def _pump_stdin(source: AsyncIterator[bytes], proc: LocalProcess) -> None:
    async for data in source:
        await proc.write_stdin(data)
    proc.close_stdin()


FIRST_SIZE_WAIT = 1.0
"""How long a tty command waits for the client's terminal size before it starts."""


async def _pump_resizes(
    first: asyncio.Future[tuple[int, int]],
    source: AsyncIterator[tuple[int, int]],
    proc: LocalProcess,
) -> None:
    try:
        proc.resize(*await first)
    except StopAsyncIteration:
        return
    async for width, height in source:
        proc.resize(width, height)


async def run_exec(
    env: ContainerProcessEnv,
    options: ExecOptions,
    *,
    stdout: Sink,
    stderr: Sink,
    stdin: AsyncIterator[bytes] | None,
    resizes: AsyncIterator[tuple[int, int]] | None,
) -> dict[str, Any]:
    """Runs the command to its end; returns the Status for the error channel.

    Cancelling (the client went away) kills the process's session.
    """
    first_size: asyncio.Future[tuple[int, int]] | None = None
    if resizes is not None and options.tty:
        # kubectl sends the terminal size right after connecting: start on it, not on 0x0.
        first_size = asyncio.ensure_future(anext(resizes))
        await asyncio.wait({first_size}, timeout=FIRST_SIZE_WAIT)
    size = None
    if first_size is not None and first_size.done() and not first_size.exception():
        size = first_size.result()
    try:
        proc = await start_process(env, options, size)
    except ExecStartError as err:
        if first_size is not None:
            first_size.cancel()
        return internal_error_status(str(err))
    inputs: list[asyncio.Task[None]] = []
    outputs: list[asyncio.Task[None]] = []
    try:
        if stdin is not None and options.stdin:
            inputs.append(asyncio.create_task(_pump_stdin(stdin, proc)))
        if resizes is not None and first_size is not None:
            inputs.append(asyncio.create_task(_pump_resizes(first_size, resizes, proc)))
        outputs.append(asyncio.create_task(_pump_output(proc.stdout_chunks(), stdout)))
        if options.stderr:
            outputs.append(asyncio.create_task(_pump_output(proc.stderr_chunks(), stderr)))
        code = await proc.wait()
        await asyncio.gather(*outputs)
    except BaseException:
        proc.kill()
        raise
    finally:
        for task in (*inputs, *outputs):
            task.cancel()
        for task in (*inputs, *outputs):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        proc.close()
    return success_status() if code == 0 else exit_status(options.command, code)
