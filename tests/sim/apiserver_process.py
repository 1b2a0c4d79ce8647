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


@contextlib.contextmanager
def running_apiserver(workdir: Path, *args: str) -> Iterator[Path]:
    """Starts ``rayop apiserver`` (loopback, free port); yields its kubeconfig path.

    Blocks until the server printed the kubeconfig path (it accepts requests by then) and,
    on exit, until it stopped after SIGTERM.
    """
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [sys.executable, "-m", "rayop", "apiserver", "--kubeconfig-out", str(kubeconfig),
           *FAST_POD_ARGS, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        if not first:
            proc.wait(timeout=10)
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"rayop apiserver did not start: {err}")
        assert Path(first) == kubeconfig
        yield kubeconfig
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kubectl_env(kubeconfig: Path, home: Path) -> dict[str, str]:
    """An environment for kubectl that uses ``kubeconfig`` and a private discovery cache."""
    env = dict(os.environ)
    env.update(KUBECONFIG=str(kubeconfig), HOME=str(home))
    return env
