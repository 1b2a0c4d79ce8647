"""Starting an exec'd command as a local process inside a container's process environment.

The command sees the container's env and working directory, and its absolute in-container
paths are remapped to where the kubelet materialized the mounts
(:class:`~rayop.sim.nodes.container_exec.ContainerProcessEnv`). Without a tty, stdin, stdout and
stderr are pipes; with one, the three are a pseudo-terminal that is the session's controlling
terminal and can be resized. A command that cannot start fails as containerd and runc report
it (:class:`ExecStartError`); an exit by signal N reports 128 + N, as container runtimes do.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import struct
import termios
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from rayop.sim.nodes.container_exec import ContainerProcessEnv

__all__ = ["ExecOptions", "ExecStartError", "LocalProcess", "reap_killed", "start_process"]

OUTPUT_DRAIN_SECONDS = 2.0
"""How long output is still relayed after the exec'd process exited (from what it left behind)."""

READ_SIZE = 32 * 1024

_REAPERS: set[asyncio.Future[int]] = set()
"""Waits for killed processes to exit (so none is left a zombie with an open transport)."""


@dataclass(frozen=True)
class ExecOptions:
    """What a ``pods/exec`` request asked for (kube's PodExecOptions, after the kubelet's rules).

    Attributes:
        command: The command and its arguments, as written in the request.
        stdin: Relay the client's stdin.
        stdout: Relay stdout.
        stderr: Relay stderr (never with a tty: the terminal carries both).
        tty: Run the command on a pseudo-terminal.
    """

    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


class ExecStartError(Exception):
    """The command could not be started; the message is containerd's and runc's."""


def _runc_error(command: str, reason: str) -> ExecStartError:
    exec_id = secrets.token_hex(32)
    return ExecStartError(
        f'failed to exec in container: failed to start exec "{exec_id}": OCI runtime exec '
        f'failed: exec failed: unable to start container process: exec: "{command}": '
        f"{reason}: unknown"
    )


def resolve_executable(env: ContainerProcessEnv, command: Sequence[str]) -> list[str]:
    """Returns the argv to run on this machine (paths remapped, the binary found on PATH).

    Raises:
        ExecStartError: No command, or its binary is missing or not executable.
    """
    if not command:
        raise ExecStartError("failed to exec in container: no command given")
    argv = env.argv(command)
    name = command[0]
    if "/" in name:
        if not os.path.exists(argv[0]):
            raise _runc_error(name, f"stat {name}: no such file or directory")
        if os.path.isdir(argv[0]) or not os.access(argv[0], os.X_OK):
            raise _runc_error(name, "permission denied")
        return argv
    found = shutil.which(name, path=env.env.get("PATH", os.defpath))
    if found is None:
        raise _runc_error(name, "executable file not found in $PATH")
    return [found, *argv[1:]]


class LocalProcess:
    """A started exec'd process and the ends of its stdio this side holds."""

    def __init__(
        self, proc: asyncio.subprocess.Process, master: int | None, options: ExecOptions
    ) -> None:
        """Wraps a started process (``master`` is the pty's master end when a tty was asked)."""
        self._proc = proc
        self._master = master
        self.options = options
        self._stdin_closed = False

    @property
    def pid(self) -> int:
        """The process id."""
        return self._proc.pid

    async def write_stdin(self, data: bytes) -> None:
        """Passes client input to the process (ignored once stdin is closed)."""
        if self._stdin_closed or not data:
            return
        if self._master is not None:
            await _write_fd(self._master, data)
            return
        if self._proc.stdin is None:
            return
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            self._stdin_closed = True

    def close_stdin(self) -> None:
        """Ends the process's stdin (on a tty: sends the terminal's end-of-file character)."""
        if self._stdin_closed:
            return
        self._stdin_closed = True
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.write(self._master, b"\x04")
        elif self._proc.stdin is not None:
            self._proc.stdin.close()

    def resize(self, width: int, height: int) -> None:
        """Sets the terminal size (no-op without a tty)."""
        if self._master is not None and width > 0 and height > 0:
            with contextlib.suppress(OSError):
                winsize = struct.pack("HHHH", height, width, 0, 0)
                fcntl.ioctl(self._master, termios.TIOCSWINSZ, winsize)

    def stdout_chunks(self) -> AsyncIterator[bytes]:
        """Yields stdout (or the terminal's output) until it ends."""
        if self._master is not None:
            return _read_fd(self._master, self._proc)
        return _read_stream(self._proc.stdout, self._proc)

    def stderr_chunks(self) -> AsyncIterator[bytes]:
        """Yields stderr until it ends (nothing with a tty)."""
        if self._master is not None:
            return _nothing()
        return _read_stream(self._proc.stderr, self._proc)

    async def wait(self) -> int:
        """Returns the exit code once the process exited (128 + N after signal N)."""
        code = await self._proc.wait()
        return 128 - code if code < 0 else code

    def kill(self) -> None:
        """Kills the process's whole session (the client went away); reaps it in the background."""
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            reaper = asyncio.ensure_future(self._proc.wait())
            _REAPERS.add(reaper)
            reaper.add_done_callback(_REAPERS.discard)

    def close(self) -> None:
        """Releases this side's end of the terminal."""
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None


async def reap_killed(timeout: float = 5.0) -> None:
    """Waits up to ``timeout`` s for the processes :meth:`LocalProcess.kill` killed on this loop
    to be reaped, so that a server shutting down leaves no transport that still thinks its
    process runs (the kernel may have reaped it before the loop ran the exit callback)."""
    loop = asyncio.get_running_loop()
    pending = {f for f in _REAPERS if f.get_loop() is loop and not f.done()}
    if pending:
        await asyncio.wait(pending, timeout=timeout)


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator


async def _read_stream(
    stream: asyncio.StreamReader | None, proc: asyncio.subprocess.Process
) -> AsyncIterator[bytes]:
    if stream is None:
        return
    exited = asyncio.ensure_future(proc.wait())
    try:
        while True:
            read = asyncio.ensure_future(stream.read(READ_SIZE))
            await asyncio.wait({read, exited}, return_when=asyncio.FIRST_COMPLETED)
            if not read.done():
                # The process exited; what it left behind may hold the pipe open.
                try:
                    await asyncio.wait_for(read, OUTPUT_DRAIN_SECONDS)
                except TimeoutError:
                    return
            data = read.result()
            if not data:
                return
            yield data
    finally:
        if not exited.done():
            exited.cancel()


async def _read_fd(fd: int, proc: asyncio.subprocess.Process) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # EIO: every slave end closed
            data = b""
        if not data:
            loop.remove_reader(fd)
        queue.put_nowait(data)

    loop.add_reader(fd, readable)
    exited = asyncio.ensure_future(proc.wait())
    try:
        while True:
            get = asyncio.ensure_future(queue.get())
            await asyncio.wait({get, exited}, return_when=asyncio.FIRST_COMPLETED)
            if not get.done():
                try:
                    await asyncio.wait_for(get, 0.2)
                except TimeoutError:
                    return
            data = get.result()
            if not data:
                return
            yield data
    finally:
        loop.remove_reader(fd)
        if not exited.done():
            exited.cancel()


async def _write_fd(fd: int, data: bytes) -> None:
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            ready = loop.create_future()
            loop.add_writer(fd, ready.set_result, None)
            try:
                await ready
            finally:
                loop.remove_writer(fd)
            continue
        except OSError:
            return
        view = view[written:]


def _set_controlling_tty() -> None:  # runs in the child, after setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


async def start_process(
    env: ContainerProcessEnv, options: ExecOptions, size: tuple[int, int] | None = None
) -> LocalProcess:
    """Starts ``options.command`` in ``env``; returns it running.

    ``size`` (width, height) is the terminal's size from the first instant, with a tty.

    Raises:
        ExecStartError: The command could not be started (containerd's message).
    """
    argv = resolve_executable(env, options.command)
    if env.wrap is not None:
        argv = env.wrap(argv)
    cwd = env.cwd if os.path.isdir(env.cwd) else None  # noqa: ASYNC240
    if options.tty:
        master, slave = os.openpty()
        os.set_blocking(master, False)
        if size is not None and size[0] > 0 and size[1] > 0:
            winsize = struct.pack("HHHH", size[1], size[0], 0, 0)
            fcntl.ioctl(master, termios.TIOCSWINSZ, winsize)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=slave, stdout=slave, stderr=slave, env=dict(env.env), cwd=cwd,
                start_new_session=True, preexec_fn=_set_controlling_tty,
            )  # fmt: skip
        except OSError as err:
            os.close(master)
            raise _runc_error(options.command[0], err.strerror or str(err)) from err
        finally:
            os.close(slave)
        return LocalProcess(proc, master, options)
    pipe, devnull = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=pipe if options.stdin else devnull,
            stdout=pipe if options.stdout else devnull,
            stderr=pipe if options.stderr else devnull,
            env=dict(env.env), cwd=cwd, start_new_session=True,
        )  # fmt: skip
    except OSError as err:
        raise _runc_error(options.command[0], err.strerror or str(err)) from err
    return LocalProcess(proc, None, options)
