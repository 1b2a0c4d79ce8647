"""Stopping a container signals its own processes only, even when its session's number has gone
to another session (pid numbers wrap around: ``pid_max`` is 32768 on many machines, and a plane
running real Ray went through about 1,900 pids and threads a minute, a wrap in ~17 minutes).

A session's number is the pid of its leader; once that leader is reaped and its session is
empty, the kernel hands the number out again, and a new session leader (another container, a
probe, a ``kubectl exec``) may get it. That reuse is simulated here by making ``os.getsid``
report an unrelated process (its own session, no container marker) as a member of the
container's session from a chosen moment on; real processes otherwise. It used to be SIGKILLed
at the end of the grace period (found by the session in every later look), or SIGTERMed by a
``stop`` after the container's leader had exited.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rayop.sim.nodes.processes.container_process import ContainerProcess


class _Sink:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: str | bytes, *, at: float | None = None) -> None:
        self.data += data.encode() if isinstance(data, str) else data

    def close(self) -> None:
        pass


class _Reuse:
    """``os.getsid`` that reports ``pid`` in ``session`` once ``on`` is set."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.session: int | None = None
        self.real = os.getsid

    def __call__(self, pid: int) -> int:
        if self.session is not None and pid == self.pid:
            return self.session
        return self.real(pid)


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process in a session of its own, without any container's marker."""
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _container(tmp_path: Path, script: str) -> ContainerProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return ContainerProcess(
        ["sh", "-c", script], env, str(tmp_path), marker="uid/c", plane="p", sink=_Sink()
    )


async def test_a_session_that_takes_the_number_during_the_grace_period_is_not_signalled(
    tmp_path: Path, bystander: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    reuse = _Reuse(bystander.pid)
    monkeypatch.setattr(os, "getsid", reuse)
    # SIGTERM ignored (and so by the exec'ed sleep): the tree lasts until the SIGKILL after grace
    container = _container(tmp_path, "trap '' TERM; sleep 60")
    await container.start()
    await asyncio.sleep(0.3)  # sh has started its sleep
    stopping = asyncio.create_task(container.stop(1.0))
    await asyncio.sleep(0)  # the first look (SIGTERM) is done before the stop first waits
    reuse.session = container._proc.pid if container._proc else None
    await asyncio.wait_for(stopping, 10)
    assert container._proc is not None and container._proc.returncode == -9  # SIGKILL
    assert bystander.poll() is None, "a later session of the same number was killed"


async def test_a_stop_after_the_leader_exited_leaves_a_later_session_alone(
    tmp_path: Path, bystander: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    reuse = _Reuse(bystander.pid)
    monkeypatch.setattr(os, "getsid", reuse)
    container = _container(tmp_path, "exit 3")
    await container.start()
    assert await container.wait() == 3
    reuse.session = container._proc.pid if container._proc else None
    await asyncio.wait_for(container.stop(5.0), 10)
    await asyncio.sleep(0.2)
    assert bystander.poll() is None, "a later session of the same number got SIGTERM"


async def test_the_session_still_ends_a_process_that_left_the_marker_behind(
    tmp_path: Path,
) -> None:
    # A process of the container's session that cleared its environment: the session finds it.
    container = _container(tmp_path, "env -i sleep 60 & echo $!; wait")
    await container.start()
    await asyncio.sleep(0.5)
    sink = container.sink
    assert isinstance(sink, _Sink)
    orphan = int(sink.data.split()[0])
    assert b"RAYOP_CONTAINER" not in _environ(orphan)
    await container.stop(2.0)
    await asyncio.sleep(0.1)
    assert _gone(orphan)


def _environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def _gone(pid: int) -> bool:
    """Tells whether the process has ended (gone, or a zombie not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True
