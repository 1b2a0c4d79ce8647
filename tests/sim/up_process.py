"""Test helper: ``rayop up`` as a subprocess, and a script that waits for its kubeconfig file and
applies the three samples at once (what a user's script does; issue 35)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from rayop.examples import sample_text

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
SAMPLES = ("raycluster", "rayjob", "rayservice")
"""What the README and ``rayop samples`` offer: a RayCluster, a RayJob and a RayService."""

WAIT_AND_APPLY = """
set -euo pipefail
until [ -e "$KUBECONFIG" ]; do
  kill -0 "$UP_PID" 2>/dev/null || { echo "rayop up exited before the kubeconfig appeared"; exit 3; }
  sleep 0.005
done
"$KUBECTL" apply -f "$SAMPLES_FILE"
"""
"""Waits for the kubeconfig file, then at once applies the three samples in one ``kubectl apply``
(their YAML is written beforehand, so nothing slows the apply down)."""


def start_up(workdir: Path, *args: str) -> subprocess.Popen[str]:
    """Starts ``rayop up`` (stderr into ``workdir/up.log``; stdout, the banner, piped)."""
    cmd = [sys.executable, "-m", "rayop", "up", *args]
    with (workdir / "up.log").open("a") as stderr:  # a file: a full pipe would block it
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)


def stop_up(proc: subprocess.Popen[str], timeout: float = 30) -> int:
    """Sends SIGINT (Ctrl-C) and returns the exit code (killing it after ``timeout``)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.returncode


def wait_and_apply_round(workdir: Path, *up_args: str) -> float:
    """Starts ``rayop up --kubeconfig-out F``, runs :data:`WAIT_AND_APPLY` against F and stops it.

    Returns the seconds the round took. Raises AssertionError when the apply fails.
    """
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig.yaml"
    samples = workdir / "samples.yaml"
    samples.write_text("---\n".join(sample_text(name) for name in SAMPLES))
    proc = start_up(
        workdir,
        "--kubeconfig-out", str(kubeconfig),
        "--metrics-addr", "0", "--health-probe-bind-address", "0",
        *up_args,
    )  # fmt: skip
    try:
        env = dict(
            os.environ,
            KUBECONFIG=str(kubeconfig),
            HOME=str(workdir),  # kubectl's discovery cache starts empty
            UP_PID=str(proc.pid),
            KUBECTL=KUBECTL,
            SAMPLES_FILE=str(samples),
        )
        script = subprocess.run(
            ["bash", "-c", WAIT_AND_APPLY], env=env, capture_output=True, text=True, timeout=60
        )
        log = (workdir / "up.log").read_text()[-3000:]
        assert script.returncode == 0, f"{script.stdout}{script.stderr}\nrayop up:\n{log}"
        for kind, name in (
            ("raycluster", "raycluster-sample"),
            ("rayjob", "rayjob-sample"),
            ("rayservice", "rayservice-sample"),
        ):
            assert f"{kind}.ray.io/{name} created" in script.stdout, script.stdout
    finally:
        code = stop_up(proc)
    assert code == 0, (workdir / "up.log").read_text()[-3000:]
    return time.monotonic() - started
