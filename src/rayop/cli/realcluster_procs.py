"""The pid file of a real control plane, and stopping its processes from that file alone.

``<workdir>/cluster.json`` records the pid of every component; a pid is only trusted while
``/proc/<pid>/cmdline`` still names the recorded binary, so a reused pid is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

STATE_FILE = "cluster.json"


def is_our_process(pid: int, binary: str) -> bool:
    """Tells whether ``pid`` is alive and runs ``binary`` (guards against pid reuse)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmdline) and os.path.basename(cmdline[0].decode(errors="replace")) == binary


def write_state(workdir: Path, state: dict[str, object]) -> None:
    """Atomically replaces ``<workdir>/cluster.json`` with ``state``."""
    tmp = workdir / f"{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(workdir / STATE_FILE)


def tail_log(workdir: Path, name: str, lines: int = 20) -> str:
    """Returns the last ``lines`` lines of a component's log."""
    path = workdir / "logs" / f"{name}.log"
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def running_pids(workdir: Path) -> dict[str, int]:
    """Returns the recorded components of ``workdir`` that are still running."""
    try:
        state = json.loads((workdir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    pids = state.get("pids") or {}
    return {name: int(pid) for name, pid in pids.items() if is_our_process(int(pid), name)}


def stop_cluster(workdir: Path, *, timeout: float = 20.0) -> list[str]:
    """Stops the components recorded in ``workdir`` (newest first); blocks until they exit.

    Sends SIGTERM, then SIGKILL to whatever is left after ``timeout`` seconds. Only processes
    whose pid still runs the recorded binary are signalled.

    Returns:
        The names of the components that were running.
    """
    alive = running_pids(workdir)
    for name in reversed(list(alive)):
        _signal(alive[name], signal.SIGTERM)
        if name == "kube-apiserver":  # let clients notice before the storage goes
            _wait_gone({name: alive[name]}, 5.0)
    if not _wait_gone(alive, timeout):
        for name, pid in alive.items():
            if is_our_process(pid, name):
                _signal(pid, signal.SIGKILL)
        _wait_gone(alive, 5.0)
    return list(alive)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_gone(pids: dict[str, int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        remaining = {n: p for n, p in pids.items() if is_our_process(p, n) and not _reap(p)}
        if not remaining:
            return True
        time.sleep(0.05)
    return False


def _reap(pid: int) -> bool:
    """Collects ``pid`` if it is our exited child; tells whether it is gone."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid
