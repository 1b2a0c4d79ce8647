"""`rayop advise --prometheus` on a real Prometheus scraping KubeRay v1.7.0 and rayop, both live.

One `rayop apiserver` plane; KubeRay watches one namespace and `rayop run` another, each with its
/metrics on loopback; Prometheus scrapes both every second (jobs ``kuberay`` and ``rayop``). While
RayClusters are created in both namespaces, each operator is read twice: through Prometheus (one
``query_range``, its job as the selector) and through its own endpoint (``--metrics-url``). Both
reads must name the operator right (KubeRay by its Go runtime, rayop by its own series), give a
verdict for its RayCluster controller that rests on the passes it ran (not "cannot tell"), and a
selector that matches both targets must be refused rather than added up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from rayop.bench.scenarios import raycluster
from rayop.kube.client import KubeClient
from rayop.kube.resources import CRDS, RAY_CLUSTERS
from tests.kuberay_compat import crds_dir, needs_material
from tests.real.prometheus_support import free_port, running_prometheus

from .real_support import create_namespace, kuberay_running, user_client
from .test_kuberay_on_embedded import running_plane

pytestmark = [pytest.mark.real, needs_material]

CLUSTERS = 24
"""RayClusters created in each operator's namespace (one every 0.5 s)."""


@contextlib.contextmanager
def _rayop_run(kubeconfig: Path, namespace: str, port: int, log: Path) -> Iterator[None]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "rayop", "run", f"--kubeconfig={kubeconfig}",
                f"--watch-namespace={namespace}", f"--metrics-addr=127.0.0.1:{port}",
                "--health-probe-bind-address=0", "--enable-leader-election=false",
                "--use-kubernetes-proxy",
            ],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _up(url: str, needle: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url) as response:
                    if response.status == 200 and needle in await response.text():
                        return
            await asyncio.sleep(0.3)
    raise AssertionError(f"{url} never served {needle!r}")


async def _create_clusters(client: KubeClient, namespace: str) -> None:
    for i in range(CLUSTERS):
        body = raycluster(f"rc-{i}", 1, namespace=namespace)
        await client.create(RAY_CLUSTERS, body, namespace=namespace)
        await asyncio.sleep(0.5)


def _advise(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rayop", "advise", *args],
        capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "COLUMNS": "250"},
    )  # fmt: skip


def _raycluster_verdict(doc: dict[str, Any]) -> dict[str, Any]:
    found = [c for c in doc["controllers"] if "raycluster" in c["controller"]]
    assert len(found) == 1, doc["controllers"]
    verdict: dict[str, Any] = found[0]
    return verdict


@contextlib.asynccontextmanager
async def _operators(
    workdir: Path, kubeconfig: Path, kuberay_binary: Path
) -> AsyncIterator[dict[str, str]]:
    ports = {"kuberay": free_port(), "rayop": free_port()}
    async with kuberay_running(
        kuberay_binary,
        str(kubeconfig),
        workdir / "ray-operator.log",
        "--watch-namespace=kr",
        "--use-kubernetes-proxy",
        metrics_addr=f"127.0.0.1:{ports['kuberay']}",
    ):
        with _rayop_run(kubeconfig, "ro", ports["rayop"], workdir / "rayop.log"):
            targets = {job: f"127.0.0.1:{port}" for job, port in ports.items()}
            for target in targets.values():
                await _up(
                    f"http://{target}/metrics", "controller_runtime_max_concurrent_reconciles"
                )
            yield targets


def _read_endpoint(target: str) -> subprocess.CompletedProcess[str]:
    url = f"http://{target}/metrics"
    return _advise("--metrics-url", url, "--window", "20", "--interval", "1", "--json")


def _read_prometheus(
    prom: str, span: list[str], job: str | None
) -> subprocess.CompletedProcess[str]:
    selector = ["--selector", f'job="{job}"', "--json"] if job else []
    return _advise("--prometheus", prom, *span, *selector)


async def _under_load(
    client: KubeClient, targets: dict[str, str], prom: str
) -> tuple[dict[str, Any], dict[str, Any], subprocess.CompletedProcess[str]]:
    """Creates the clusters while each endpoint is read; then reads Prometheus over the span."""
    await _up(f"{prom}/-/ready", "")
    started = time.time()
    reads = {
        job: asyncio.create_task(asyncio.to_thread(_read_endpoint, t)) for job, t in targets.items()
    }
    await asyncio.gather(_create_clusters(client, "kr"), _create_clusters(client, "ro"))
    direct = {job: await task for job, task in reads.items()}
    await asyncio.sleep(3)  # the last scrapes land in Prometheus
    span = ["--start", f"{started:.3f}", "--end", f"{time.time():.3f}", "--step", "1"]
    through = {job: await asyncio.to_thread(_read_prometheus, prom, span, job) for job in targets}
    both = await asyncio.to_thread(_read_prometheus, prom, span, None)
    return direct, through, both


async def test_advise_reads_kuberay_and_rayop_through_a_real_prometheus(
    tmp_path: Path, kuberay_binary: Path
) -> None:
    with running_plane(tmp_path) as plane:
        async with user_client(str(plane.kubeconfig)) as client:
            for path in sorted(crds_dir().glob("*.yaml")):
                await client.create(CRDS, yaml.safe_load(path.read_text()))
            for ns in ("kr", "ro"):
                await create_namespace(client, ns)
            async with _operators(tmp_path, plane.kubeconfig, kuberay_binary) as targets:
                with running_prometheus(targets, tmp_path) as prom:
                    direct, through, both = await _under_load(client, targets, prom)

    names = {"kuberay": "KubeRay", "rayop": "rayop"}
    for job, name in names.items():
        for how, read in (("endpoint", direct[job]), ("prometheus", through[job])):
            assert read.returncode == 0, f"{job} via {how}: {read.stdout}{read.stderr}"
            doc = json.loads(read.stdout)
            assert doc["operator"] == name, (job, how, doc["operator"])
            verdict = _raycluster_verdict(doc)
            assert verdict["verdict"] != "cannot-tell", (job, how, verdict)
            passes = re.search(r"(\d+) passes", verdict["reasons"][0])
            assert passes and int(passes.group(1)) >= CLUSTERS, (job, how, verdict["reasons"])
    assert both.returncode == 2
    assert "of 2 scrape targets (kuberay/" in both.stderr, both.stderr
