"""A killed exec'd process is reaped before the embedded server's shutdown returns."""

from __future__ import annotations

from pathlib import Path

from rayop.sim.apiserver.streaming.exec_process import ExecOptions, reap_killed, start_process
from rayop.sim.nodes.container_exec import ContainerProcessEnv


async def test_a_killed_process_is_reaped_before_shutdown_returns(tmp_path: Path) -> None:
    env = ContainerProcessEnv(
        env={"PATH": "/usr/bin:/bin"}, cwd=str(tmp_path), pod_ip="127.0.0.1", mounts={}
    )
    options = ExecOptions(("sleep", "300"), stdin=False, stdout=True, stderr=True, tty=False)
    proc = await start_process(env, options)
    proc.kill()
    assert proc._proc.returncode is None  # killed, not yet reaped
    await reap_killed()
    # The transport knows its process ended: nothing is left for the garbage collector to
    # report as "subprocess ... is still running" once the loop is gone.
    assert proc._proc.returncode == -9
