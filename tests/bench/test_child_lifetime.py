"""A bench's ``rayop apiserver`` child ends with the bench, whatever signal ends the bench."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rayop.bench.child_lifetime import end_with_parent

# A parent that starts the bench's control plane, prints the child's pid, and waits to be killed.
BENCH_PARENT = """
import asyncio, sys
from rayop.bench.environment import ServerSettings, SubprocessControlPlane

async def main() -> None:
    async with SubprocessControlPlane(ServerSettings()) as plane:
        print(plane.pid, flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""

# A parent that starts a plain sleeping child tied to its lifetime.
SLEEP_PARENT = """
import subprocess
from rayop.bench.child_lifetime import end_with_parent
child = subprocess.Popen(["sleep", "3600"], preexec_fn=end_with_parent())
print(child.pid, flush=True)
child.wait()
"""


def alive(pid: int) -> bool:
    """Tells whether ``pid`` is a live process (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    """Polls until ``pid`` is gone; returns whether it went within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def start_parent(script: str) -> tuple[subprocess.Popen[str], int]:
    """Runs ``script`` in a new Python process; returns it and the child pid it prints."""
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    line = parent.stdout.readline()
    assert line.strip().isdigit(), f"the parent printed {line!r}"
    return parent, int(line)


def finish(parent: subprocess.Popen[str], child: int) -> None:
    """Reaps the parent; kills the child if it outlived the test."""
    parent.wait(timeout=10)
    assert parent.stdout is not None
    parent.stdout.close()
    if alive(child):
        os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_child_dies_with_its_parent(sig: signal.Signals) -> None:
    parent, child = start_parent(SLEEP_PARENT)
    try:
        assert alive(child)
        parent.send_signal(sig)
        assert wait_gone(child), f"the child outlived a parent ended by {sig.name}"
    finally:
        finish(parent, child)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_bench_killed_with_sigterm_leaves_no_apiserver_running() -> None:
    parent, child = start_parent(BENCH_PARENT)
    try:
        assert alive(child)
        parent.send_signal(signal.SIGTERM)  # what `timeout` sends; no __aexit__ runs
        assert wait_gone(child), "rayop apiserver outlived the bench"
    finally:
        finish(parent, child)


def test_the_hook_refuses_nothing_on_linux_and_returns_a_callable() -> None:
    if sys.platform.startswith("linux"):
        assert callable(end_with_parent())
