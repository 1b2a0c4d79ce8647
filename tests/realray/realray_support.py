"""Helpers of the real-Ray tier: ``rayop up --real-ray`` as a subprocess, kubectl, the Ray
processes of a pod (found by the ``RAYOP_POD`` marker the kubelet puts into their environment)
and their memory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rayop.sim.nodes.processes.container_process import tree_pids
from tests.kuberay_compat import crds_dir
from tests.sim.apiserver_process import start_apiserver, stop_apiserver
from tests.sim.up_process import stop_up

KUBECTL = shutil.which("kubectl") or "kubectl"


class Kubectl:
    """Runs kubectl against one plane."""

    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.kubeconfig = kubeconfig
        self.env = dict(os.environ, KUBECONFIG=str(kubeconfig), HOME=str(home))

    def run(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``kubectl args...``; fails the test on a non-zero exit when ``check``."""
        proc = subprocess.run(
            [KUBECTL, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}{proc.stdout}")
        return proc

    def json(self, *args: str) -> Any:
        """Runs ``kubectl get args... -o json`` and decodes it."""
        return json.loads(self.run("get", *args, "-o", "json").stdout)

    def apply(self, manifest: str) -> None:
        """Applies a manifest given as text."""
        proc = subprocess.run(
            [KUBECTL, "apply", "-f", "-"],
            env=self.env,
            input=manifest,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr

    def wait_for(self, what: str, jsonpath: str, value: str, timeout: float) -> float:
        """Blocks until ``{jsonpath}`` of ``what`` is ``value``; returns the seconds it took."""
        start = time.monotonic()
        while True:
            out = self.run("get", what, "-o", f"jsonpath={{{jsonpath}}}", check=False)
            if out.returncode == 0 and out.stdout.strip() == value:
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise AssertionError(
                    f"{what} {jsonpath} is {out.stdout!r}, not {value!r} after {timeout} s"
                )
            time.sleep(1.0)

    def pod_names(self, selector: str) -> list[str]:
        """The names of the pods the label selector matches."""
        items = self.json("pods", "-l", selector)["items"]
        return [str(p["metadata"]["name"]) for p in items]


@contextmanager
def rayop_up(
    workdir: Path, ray_env: str, *extra: str
) -> Iterator[tuple[subprocess.Popen[str], Kubectl]]:
    """Runs ``rayop up --real-ray [extra...]`` until the block exits, then stops it (SIGINT)."""
    kubeconfig = workdir / "kubeconfig.yaml"
    cmd = [
        sys.executable, "-m", "rayop", "up", "--real-ray", "--kubeconfig-out", str(kubeconfig),
        "--metrics-addr", "0", "--health-probe-bind-address", "0", *extra,
    ]  # fmt: skip
    env = dict(os.environ, RAYOP_RAY_ENV=ray_env)
    with (workdir / "up.log").open("a") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("rayop is up"), first + (workdir / "up.log").read_text()
        yield proc, Kubectl(kubeconfig, workdir)
    finally:
        stop(proc)


@contextmanager
def rayop_up_kubectl(workdir: Path, ray_env: str, *extra: str) -> Iterator[Kubectl]:
    """:func:`rayop_up` for a block that needs only kubectl."""
    with rayop_up(workdir, ray_env, *extra) as (_proc, kubectl):
        yield kubectl


def stop(proc: subprocess.Popen[str], timeout: float = 90) -> int:
    """Sends SIGINT (Ctrl-C) and waits for the exit (killing it after ``timeout``)."""
    return stop_up(proc, timeout)


def pod_pids(uid: str) -> list[int]:
    """The pids of every process of the pod (its containers and all they started)."""
    return tree_pids(f"RAYOP_POD={uid}")


def rss_bytes(pids: list[int]) -> int:
    """The summed resident set size of the processes (those gone are skipped)."""
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def kuberay_binary() -> str:
    """KubeRay v1.7.0's operator binary (fails the test when it was not built)."""
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    binary = os.environ.get("RAYOP_KUBERAY_BINARY") or f"{cache}/kuberay/v1.7.0/ray-operator"
    if not os.path.isfile(binary):
        pytest.fail(f"no KubeRay binary at {binary} (scripts/controlplane-build kuberay)")
    return binary


@contextmanager
def kuberay_on_apiserver(
    workdir: Path, ray_env: str, *apiserver_args: str, operator_args: Sequence[str] = ()
) -> Iterator[Kubectl]:
    """KubeRay v1.7.0's operator on ``rayop apiserver --real-ray [apiserver_args...]`` with
    KubeRay's own CRDs, started with ``operator_args`` added to its flags."""
    binary = kuberay_binary()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAYOP_RAY_ENV", ray_env)
        server, kubeconfig = start_apiserver(workdir, "--real-ray", *apiserver_args)
    try:
        kubectl = Kubectl(kubeconfig, workdir)
        kubectl.run("create", "-f", str(crds_dir()))
        with (workdir / "ray-operator.log").open("a") as log:
            operator = subprocess.Popen(
                [binary, "--metrics-addr=0", "--health-probe-bind-address=0",
                 "--enable-leader-election=false", *operator_args],
                env=dict(os.environ, KUBECONFIG=str(kubeconfig)),
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            yield kubectl
        finally:
            operator.terminate()
            try:
                operator.wait(15)
            except subprocess.TimeoutExpired:
                operator.kill()
                operator.wait()
    finally:
        stop_apiserver(server)


KUBERAY_CONTROL = pytest.param(
    "kuberay",
    marks=pytest.mark.skipif(
        os.environ.get("RAYOP_REALRAY_KUBERAY_CONTROL") != "1",
        reason="KubeRay's control run of this file is not part of CI's time budget: "
        "RAYOP_REALRAY_KUBERAY_CONTROL=1 scripts/test-realray runs it (docs/real-ray.md)",
    ),
)
"""The ``kuberay`` case of a file whose rayop cases CI runs and whose KubeRay cases are the
control a developer runs by hand (the autoscaler's KubeRay cases always run: issue 36 asks
for them)."""
