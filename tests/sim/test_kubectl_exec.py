"""The real kubectl execs into pods whose containers a ContainerExecutor says are running.

Each case runs over WebSocket (``v5.channel.k8s.io``, kubectl's default since 1.30) and over
SPDY/3.1 (``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``, the fallback).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from streaming_server import KUBECTL, StreamingServer, open_streaming_server

from rayop.sim.nodes.container_exec import ContainerProcessEnv

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
