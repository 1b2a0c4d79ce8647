"""The real kubectl execs into pods whose containers a ContainerExecutor says are running.

Each case runs over WebSocket (``v5.channel.k8s.io``, kubectl's default since 1.30) and over
SPDY/3.1 (``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``, the fallback).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rayop.sim.apiserver.faults import Faults
from rayop.sim.nodes.container_exec import ContainerProcessEnv
from rayop.testing import eventually

from .streaming_server import KUBECTL, StreamingServer, open_streaming_server

pytestmark = pytest.mark.skipif(not Path(KUBECTL).exists(), reason="kubectl is not installed")

TRANSPORTS = {
    "websocket": {},
    "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"},
}


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> dict[str, str]:
    return dict(TRANSPORTS[request.param])


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[StreamingServer]:
    async with open_streaming_server(tmp_path) as srv:
        config = tmp_path / "pod" / "config"
        config.mkdir(parents=True)
        (config / "entrypoint.py").write_text("print('from the configmap')\n")
        work = tmp_path / "pod" / "work"
        work.mkdir()
        srv.executor.envs["head"] = ContainerProcessEnv(
            env={"PATH": "/usr/bin:/bin", "X": "hello", "HOME": str(work)},
            cwd=str(work),
            pod_ip="127.0.0.1",
            mounts={"/home/ray/samples": str(config)},
        )
        await srv.create_pod("head", "ray-head")
        yield srv


async def test_exit_code_and_env_surface_in_kubectl(
    server: StreamingServer, transport: dict[str, str]
) -> None:
    code, out, err = await server.kubectl(
        "exec", "head", "--", "sh", "-c", "echo $X; echo oops >&2; exit 3", env=transport
    )
    assert (code, out) == (3, "hello\n"), err
    assert "oops\n" in err
    assert "command terminated with exit code 3" in err


async def test_success_stdin_cwd_and_remapped_mounts(
    server: StreamingServer, transport: dict[str, str]
) -> None:
    code, out, err = await server.kubectl(
        "exec", "-i", "head", "--", "sh", "-c", "cat; pwd", stdin=b"line one\nline two\n",
        env=transport,
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["line one", "line two"]
    assert lines[2].endswith("/pod/work")
    code, out, err = await server.kubectl(
        "exec", "head", "--", "cat", "/home/ray/samples/entrypoint.py", env=transport
    )
    assert (code, out) == (0, "print('from the configmap')\n"), err


async def test_bad_input_answers_as_kube_apiserver_and_the_kubelet(
    server: StreamingServer, transport: dict[str, str]
) -> None:
    code, _, err = await server.kubectl("exec", "head", "-c", "nosuch", "--", "true", env=transport)
    assert code == 1 and "container nosuch is not valid for pod head" in err, err
    await server.create_pod("pending", "ray-head")  # bound to a node, no process env
    code, _, err = await server.kubectl("exec", "pending", "--", "true", env=transport)
    assert code == 1 and 'unable to upgrade connection: container not found ("ray-head")' in err
    await server.create_pod("unbound", "ray-head", node="")
    code, _, err = await server.kubectl("exec", "unbound", "--", "true", env=transport)
    assert code == 1 and "pod unbound does not have a host assigned" in err, err
    code, _, err = await server.kubectl("exec", "head", "--", "no-such-binary", env=transport)
    assert code == 1, err
    assert "Internal error occurred: error executing command in container" in err
    assert 'exec: "no-such-binary": executable file not found in $PATH' in err
    code, _, err = await server.kubectl(
        "exec", "head", "--", "sh", "-c", "no-such-binary", env=transport
    )
    assert code == 127 and "command terminated with exit code 127" in err, err
    code, _, err = await server.kubectl(
        "exec", "head", "--", "sh", "-c", "kill -9 $$", env=transport
    )
    assert code == 137 and "command terminated with exit code 137" in err, err


class Terminal:
    """A pseudo-terminal kubectl runs on (kubectl -t needs its stdin to be a terminal)."""

    def __init__(self, rows: int, cols: int) -> None:
        self.master, self.slave = os.openpty()
        self.resize(rows, cols)
        os.set_blocking(self.master, False)
        self.output = b""

    def resize(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    async def read_until(self, text: bytes, timeout: float = 20) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while text not in self.output:
            ready = loop.create_future()
            loop.add_reader(self.master, ready.set_result, None)
            try:
                await asyncio.wait_for(ready, max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise AssertionError(f"no {text!r} in {self.output!r}") from None
            finally:
                loop.remove_reader(self.master)
            with contextlib.suppress(BlockingIOError):
                self.output += os.read(self.master, 4096)

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


async def test_tty_sizes_and_resizes_the_terminal(
    server: StreamingServer, transport: dict[str, str]
) -> None:
    term = Terminal(30, 100)
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "exec", "-it", "head", "--", "sh", "-c",
        'tty >/dev/null && echo is-a-tty; stty size; read x; '
        'while [ "$(stty size)" = "30 100" ]; do sleep 0.05; done; stty size; exit 4',
        stdin=term.slave, stdout=term.slave, stderr=term.slave, env=server.env(**transport),
    )  # fmt: skip
    try:
        await term.read_until(b"30 100")
        assert b"is-a-tty" in term.output
        os.write(term.master, b"go\r")  # stdin reaches the command
        term.resize(40, 120)
        proc.send_signal(signal.SIGWINCH)  # kubectl relays the new size on the resize channel
        await term.read_until(b"40 120")
        assert await asyncio.wait_for(proc.wait(), 20) == 4
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        term.close()


def _exists(pid: int) -> bool:
    """True while the process exists, zombie included (so False means killed and reaped)."""
    try:
        Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone (ENOENT, or ESRCH while being read)
        return False
    return True


async def test_a_client_that_goes_away_ends_the_command(
    server: StreamingServer, transport: dict[str, str], tmp_path: Path
) -> None:
    pidfile = tmp_path / "exec.pid"
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "exec", "head", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 300",
        env=server.env(**transport), stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    await eventually(lambda: pidfile.exists() and pidfile.read_text().strip() != "", timeout=20)
    pid = int(pidfile.read_text())
    assert _exists(pid)
    proc.kill()
    await proc.wait()
    await eventually(lambda: not _exists(pid), timeout=20, what=f"exec'd process {pid} reaped")


async def test_kubectl_cp_into_a_remapped_mount_and_out_of_the_working_directory(
    server: StreamingServer, transport: dict[str, str], tmp_path: Path
) -> None:
    local = tmp_path / "local.py"
    local.write_text("print('copied in')\n")
    code, _, err = await server.kubectl(
        "cp", str(local), "head:/home/ray/samples/copied.py", env=transport
    )  # tar xf - in the pod: stdin must reach its end (v5 CLOSE, SPDY FIN)
    assert code == 0, err
    assert (tmp_path / "pod" / "config" / "copied.py").read_text() == "print('copied in')\n"
    # Out of the pod, from the working directory (an absolute remapped path would name the
    # file by its path on this machine inside the tar stream, which kubectl refuses).
    (tmp_path / "pod" / "work" / "result.txt").write_text("42\n")
    back = tmp_path / "back.txt"
    code, _, err = await server.kubectl("cp", "head:result.txt", str(back), env=transport)
    assert code == 0, err
    assert back.read_text() == "42\n"


async def test_an_open_exec_is_not_counted_in_flight(tmp_path: Path) -> None:
    faults = Faults(seed=3)
    async with open_streaming_server(tmp_path, faults) as srv:
        srv.executor.envs["head"] = ContainerProcessEnv(
            env={"PATH": "/usr/bin:/bin"}, cwd=str(tmp_path), pod_ip="127.0.0.1", mounts={}
        )
        await srv.create_pod("head", "ray-head")
        faults.max_in_flight = 1  # one request at a time, long-running ones exempt
        proc = await asyncio.create_subprocess_exec(
            KUBECTL, "exec", "-i", "head", "--", "sh", "-c", "echo started; cat",
            env=srv.env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stdin is not None
        assert await asyncio.wait_for(proc.stdout.readline(), 20) == b"started\n"
        code, out, err = await srv.kubectl("get", "pod", "head", "-o", "name")
        assert (code, out) == (0, "pod/head\n"), err
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 20) == 0
