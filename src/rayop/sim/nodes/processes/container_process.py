"""One container's process tree: start it, copy its output to the log, stop all of it.

The container's command runs in a new session with ``RAYOP_CONTAINER=<pod uid>/<container>`` in
its environment. ``ray start`` daemonizes the GCS, raylet, dashboard and agents, and Ray's job
supervisor starts entrypoints in sessions of their own, but every one of them inherits that
variable; :func:`tree_pids` finds the whole tree by it (and by the session), so stopping a
container (SIGTERM, then SIGKILL after the grace period) leaves nothing behind, as the end of
a container's PID namespace does. The session counts only while its leader is this container's
(not yet reaped) and only at the first look: once the leader is gone its number is free, and on a
machine whose ``pid_max`` is 32768 a real-Ray plane wraps around in about a quarter of an hour
(1,900 pids a minute while the autoscaler tests ran beside other work), so a later session
of that number (another container, a probe, a ``kubectl exec``) must not get this container's
SIGTERM (an unrelated exit 143). stdout and stderr go to the container's log together, as
``kubectl logs`` shows them. Given a :class:`~.mount_namespace.MountPlan`, the command starts
in a private mount namespace with the pod's mounts (:mod:`.mount_launcher`); a failure to make
it, or to exec the command in it, is raised by :meth:`ContainerProcess.start` as an exec
failure is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from rayop.sim.nodes.container_logs import LogSink
from rayop.sim.nodes.processes.mount_namespace import MountPlan, launcher_argv

__all__ = ["CONTAINER_ENV", "ContainerProcess", "kill_tree", "tree_pids"]

CONTAINER_ENV = "RAYOP_CONTAINER"
PLANE_ENV = "RAYOP_PLANE"


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return marker in data.split(b"\0")


def tree_pids(marker: str, *, session: int | None = None) -> list[int]:
    """Returns the pids whose environment holds ``marker`` (``NAME=value``) or in ``session``."""
    wanted = marker.encode()
    me = os.getpid()
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        in_session = False
        if session is not None:
            with contextlib.suppress(OSError):
                in_session = os.getsid(pid) == session
        if in_session or _environ_has(pid, wanted):
            found.append(pid)
    return found


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or
    None when it is gone: with the pid it names one process, not whichever reuses the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat.rpartition(b")")[2].split()[19])


async def kill_tree(marker: str, *, session: int | None, grace: float) -> None:
    """Sends SIGTERM to the tree, waits up to ``grace`` seconds, then SIGKILLs what is left.

    ``session`` must still be the tree's (its leader not reaped): its members are taken at the
    first look only and followed by pid and start time; later looks find the tree by ``marker``.
    """
    started_at = {pid: _start_time(pid) for pid in tree_pids(marker, session=session)}
    known = {pid: started for pid, started in started_at.items() if started is not None}

    def left() -> list[int]:
        alive = {pid for pid, started in known.items() if _start_time(pid) == started}
        return sorted(alive.union(tree_pids(marker)))

    pids = list(known)
    _signal_all(pids, signal.SIGTERM)
    deadline = asyncio.get_running_loop().time() + max(0.0, grace)
    while pids and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
        pids = left()
    while pids:
        _signal_all(pids, signal.SIGKILL)
        await asyncio.sleep(0.1)
        pids = left()


class ContainerProcess:
    """A running container command (its process tree and its output pump).

    Args:
        argv: The command and args, already rewritten for this machine.
        env: The full environment (the marker variables are added here).
        cwd: The working directory.
        marker: ``<pod uid>/<container>``; stored in ``RAYOP_CONTAINER``.
        plane: The control plane's id, stored in ``RAYOP_PLANE``.
        sink: Where stdout and stderr go.
        plan: The container's mount namespace (None: the command runs in this machine's).
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        *,
        marker: str,
        plane: str,
        sink: LogSink,
        plan: MountPlan | None = None,
    ) -> None:
        self.argv = list(argv)
        self.plan = plan
        self.env = {**env, CONTAINER_ENV: marker, PLANE_ENV: plane}
        self.cwd = cwd
        self.marker = f"{CONTAINER_ENV}={marker}"
        self.sink = sink
        self._proc: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Starts the command in a new session.

        Raises:
            OSError: the executable does not exist or cannot run, or the mount namespace could
                not be made (the caller reports it as the container's error).
        """
        if self.plan is None:
            self._proc = await self._spawn(self.argv, ())
        else:
            read_end, write_end = os.pipe()
            try:
                self._proc = await self._spawn(
                    launcher_argv(self.plan, write_end, self.argv), (write_end,)
                )
            except OSError:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)
            failure = await asyncio.to_thread(_read_to_end, read_end)
            if failure:
                await self._proc.wait()
                self._close_transport()
                number, _, message = failure.partition("\n")
                raise OSError(int(number or 0), message)
        self._pump = asyncio.create_task(self._copy_output(), name=f"logs {self.marker}")

    async def _spawn(
        self, argv: Sequence[str], pass_fds: Sequence[int]
    ) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *argv,
            env=self.env,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            limit=1 << 20,
            pass_fds=tuple(pass_fds),
        )

    async def _copy_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        while True:
            try:
                line = await self._proc.stdout.readline()
            except ValueError:  # a line longer than the limit: pass on what was read
                line = await self._proc.stdout.read(1 << 20)
            if not line:
                return
            self.sink.write(line)

    async def wait(self) -> int:
        """Waits for the command to exit, kills what it left running, returns its exit code."""
        assert self._proc is not None
        code = await self._proc.wait()
        await kill_tree(self.marker, session=self._proc.pid, grace=0.0)
        await self._close_output()
        return code

    async def stop(self, grace: float) -> None:
        """Stops the whole tree: SIGTERM, then SIGKILL after ``grace`` seconds.

        The session is looked at only while the leader is not reaped; after that
        :meth:`wait` has ended the session, and its number may be another's now.
        """
        leader = self._proc
        session = leader.pid if leader is not None and leader.returncode is None else None
        await kill_tree(self.marker, session=session, grace=grace)
        if self._proc is not None:
            if self._proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
            await self._proc.wait()
        await self._close_output()

    async def _close_output(self) -> None:
        """Lets the pump read the output to its end (2 s at most), then closes the pipe."""
        if self._pump is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._pump), 2.0)
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        self._close_transport()

    def _close_transport(self) -> None:
        transport = getattr(self._proc, "_transport", None)
        if transport is not None:
            transport.close()  # the pipe of a daemon that outlived its kill would stay open


def _read_to_end(fd: int) -> str:
    """Reads the launcher's status pipe until every writer has closed it (at its exec)."""
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace")
