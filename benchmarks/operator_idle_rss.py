"""Benchmark: the resident memory of an idle ``rayop run`` (not a test).

Starts ``rayop apiserver`` (plain HTTP) with rayop's CRDs, then ``rayop run`` against it with no
endpoints and no leader election, and reads the operator's RSS and CPU after 30 s of idling
(caches synced, nothing to reconcile). Compare two checkouts by putting each one's ``src`` first
on ``PYTHONPATH``::

    PYTHONPATH=src .venv/bin/python benchmarks/operator_idle_rss.py
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.testing.control_plane import install_crds

IDLE_SECONDS = 30


async def _install_crds(kubeconfig_text: str) -> None:
    doc = yaml.safe_load(kubeconfig_text)
    config = KubeConfig.for_server(
        doc["clusters"][0]["cluster"]["server"], token=doc["users"][0]["user"]["token"]
    )
    async with KubeClient(config, qps=-1) as client:
        await install_crds(client)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    """Prints the idle operator's RSS (MiB) and CPU seconds."""
    with tempfile.TemporaryDirectory(prefix="rayop-idle-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig.yaml"
        server = subprocess.Popen(
            [sys.executable, "-m", "rayop", "apiserver", "--no-tls",
             "--kubeconfig-out", str(kubeconfig)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=os.environ,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            server.stdout.readline()
            asyncio.run(_install_crds(kubeconfig.read_text()))
            operator = subprocess.Popen(
                [sys.executable, "-m", "rayop", "run", "--kubeconfig", str(kubeconfig),
                 "--metrics-addr", "0", "--health-probe-bind-address", "0",
                 "--enable-leader-election=false"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ,
            )  # fmt: skip
            try:
                process = psutil.Process(operator.pid)
                time.sleep(IDLE_SECONDS)
                rss = process.memory_info().rss / 2**20
                cpu = process.cpu_times()
                print(
                    f"idle operator after {IDLE_SECONDS} s: RSS {rss:.1f} MiB, "
                    f"CPU {cpu.user + cpu.system:.2f} s"
                )
            finally:
                _stop(operator)
        finally:
            _stop(server)


if __name__ == "__main__":
    main()
