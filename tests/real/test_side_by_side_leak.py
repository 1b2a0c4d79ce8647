"""``benchmarks/side_by_side.py`` leaves nothing running, whatever signal ends it.

The script starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, the
operator and ``rayop bench``, all as its own children. Ended by SIGTERM (``timeout``, a CI
runner) it stops them in its ``finally``; ended by SIGKILL it cannot, and the kernel kills them
(each was started with ``prctl(PR_SET_PDEATHSIG)``). Real processes, no mocks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.real, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def _name(proc: psutil.Process) -> str:
    try:
        cmdline = proc.cmdline()
    except psutil.Error:
        return ""
    if not cmdline:
        return ""
    args = cmdline[1:] if Path(cmdline[0]).name.startswith("python") else cmdline
    if args[:2] == ["-m", "rayop"] and len(args) > 2:  # python -m rayop bench
        return f"rayop {args[2]}"
    if len(args) > 1 and Path(args[0]).name == "rayop":  # [python] .venv/bin/rayop run
        return f"rayop {args[1]}"
    return Path(cmdline[0]).name


def _descendants(pid: int) -> dict[str, int]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return {}
    return {_name(p): p.pid for p in children}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {seconds} s")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_every_child_ends_with_the_script(
    controlplane_binaries: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    cmd = [
        sys.executable, str(REPO / "benchmarks" / "side_by_side.py"),
        "--clusters", "20", "--workers", "2", "--concurrency", "1", "--operators", "rayop",
        "--timeout", "120",
    ]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with (tmp_path / "out.log").open("wb") as log:
        script = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    children: dict[str, int] = {}
    try:
        wanted = {*COMPONENTS, "rayop run", "rayop bench"}
        _wait_for(
            lambda: wanted <= set(_descendants(script.pid)) or script.poll() is not None,
            180,
            "the control plane, the operator and the bench running",
        )
        assert script.poll() is None, (tmp_path / "out.log").read_text()[-3000:]
        children = _descendants(script.pid)
        script.send_signal(sig)
        script.wait(60)
        _wait_for(
            lambda: not any(_alive(pid) for pid in children.values()),
            30,
            f"every child gone after {sig.name}",
        )
        workdirs = list(tmp_path.glob("rayop-side-by-side-*"))
        if sig == signal.SIGTERM:  # its finally ran: its temporary directory is gone
            assert workdirs == []
    finally:
        if script.poll() is None:
            script.kill()
            script.wait()
        for pid in children.values():  # what a failed test would otherwise leave running
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
