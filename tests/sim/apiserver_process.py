"""Test helper: run ``rayop apiserver`` as a subprocess and hand out its kubeconfig."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

FAST_POD_ARGS = ("--pod-running-delay", "0.05", "--pod-ready-delay", "0.05")


def start_apiserver(workdir: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """Starts ``rayop apiserver`` (loopback, free port); returns the process and kubeconfig.

    Blocks until the server printed the kubeconfig path (it accepts requests by then).
    """
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [
        sys.executable,
        "-m",
        "rayop",
        "apiserver",
        "--kubeconfig-out",
        str(kubeconfig),
        *FAST_POD_ARGS,
        *args,
    ]
    log = workdir / "apiserver.log"
    with log.open("a") as stderr:  # a file, not a pipe: a full pipe would block the server
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    if not first:
        proc.wait(timeout=10)
        raise RuntimeError(f"rayop apiserver did not start: {log.read_text()}")
    assert Path(first) == kubeconfig
    return proc, kubeconfig


def stop_apiserver(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> int:
    """Sends ``sig``, blocks until the server exited (killing it after 15 s) and closes its pipe.

    Returns the exit code.
    """
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    return code


@contextlib.contextmanager
def running_apiserver(workdir: Path, *args: str) -> Iterator[Path]:
    """Runs ``rayop apiserver`` for the duration of the block; yields its kubeconfig path.

    On exit, blocks until the server stopped after SIGTERM.
    """
    proc, kubeconfig = start_apiserver(workdir, *args)
    try:
        yield kubeconfig
    finally:
        stop_apiserver(proc)


def kubectl_env(kubeconfig: Path, home: Path) -> dict[str, str]:
    """An environment for kubectl that uses ``kubeconfig`` and a private discovery cache."""
    env = dict(os.environ)
    env.update(KUBECONFIG=str(kubeconfig), HOME=str(home))
    return env
