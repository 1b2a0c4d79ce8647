"""Real Helm: KubeRay v1.7.0's own chart runs rayop, and rayop's chart lints and renders.

Helm is built by ``scripts/controlplane-build helm`` (cached under ~/.cache/rayop/helm/); the
tests skip with the build's failed step only when it cannot be built.

KubeRay's chart (``helm-chart/kuberay-operator``, tests/kuberay_compat.py) is rendered with
``helm template`` and ``rayop run`` is started as a subprocess with exactly the operator
container's args and env, against an embedded control plane (admin kubeconfig: this test is
about the args, the chart's RBAC names KubeRay's objects). Stand-ins for what a kubelet gives a
pod: ``KUBECONFIG`` points at the plane, and free loopback ports are appended for /metrics and
the probes (a later Go flag wins, so the chart's own flags all stay and are parsed). The
operator must pass the chart's probe (``GET /metrics`` on the metrics port), turn ready and
bring a sample RayCluster to ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from rayop.kube.resources import RAY_CLUSTERS
from rayop.testing import eventually, open_control_plane
from tests.kuberay_compat import helm_chart_dir, sample_docs

from .real_support import build

pytestmark = pytest.mark.real

REPO = Path(__file__).resolve().parents[2]
HELM_VERSION = "v3.22.0"
RAYOP_CHART = REPO / "helm" / "rayop"
SAMPLE = "ray-cluster.sample.yaml"


@pytest.fixture(scope="module")
def helm() -> Path:
    """The real helm binary, built (or reused) by scripts/controlplane-build."""
    ok, why = build("helm")
    if not ok:
        pytest.skip(f"helm {HELM_VERSION} cannot be built here: {why}")
    cache = os.environ.get("RAYOP_CACHE_DIR") or os.path.expanduser("~/.cache/rayop")
    return Path(cache) / "helm" / HELM_VERSION / "helm"


def run_helm(helm: Path, *args: str) -> str:
    """Runs helm; returns stdout, fails the test with stderr on a non-zero exit."""
    proc = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"helm {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def rendered(helm: Path, name: str, chart: Path, namespace: str) -> list[dict[str, Any]]:
    """Returns the objects ``helm template`` renders for ``chart`` with its default values."""
    text = run_helm(helm, "template", name, str(chart), "--namespace", namespace)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def operator_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return containers[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_rayop_chart_lints_and_renders_with_default_values(helm: Path) -> None:
    out = run_helm(helm, "lint", str(RAYOP_CHART))
    assert "1 chart(s) linted, 0 chart(s) failed" in out
    objects = rendered(helm, "rayop", RAYOP_CHART, "rayop-system")
    container = operator_container(objects)
    assert container["args"], "the Deployment runs rayop with no args"
    assert {"ServiceAccount", "Deployment"} <= {o["kind"] for o in objects}


def test_kuberay_chart_renders_the_args_rayop_must_take(helm: Path) -> None:
    chart = helm_chart_dir()
    container = operator_container(rendered(helm, "kuberay-operator", chart, "ray-system"))
    args = container["args"]
    for flag in ("--log-stdout-encoder", "--log-file-encoder", "--enable-leader-election=true"):
        assert flag in args
    assert any(a.startswith("--feature-gates=") for a in args)
    assert container["readinessProbe"]["httpGet"]["path"] == "/metrics"


@contextlib.asynccontextmanager
async def rayop_run(
    args: list[str], env: dict[str, str], log: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Starts ``rayop run`` with ``args``; stops it with SIGTERM on exit."""
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rayop", "run", *args,
            env=env, stdout=out, stderr=asyncio.subprocess.STDOUT, cwd=REPO,
        )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def answers_200(session: aiohttp.ClientSession, url: str) -> bool:
    with contextlib.suppress(aiohttp.ClientError):
        async with session.get(url) as resp:
            return resp.status == 200
    return False


async def test_rayop_runs_with_exactly_the_args_of_kuberays_chart(
    helm: Path, tmp_path: Path
) -> None:
    chart = helm_chart_dir()
    container = operator_container(rendered(helm, "kuberay-operator", chart, "ray-system"))
    metrics_port, probe_port = free_port(), free_port()
    args = [
        *container["args"],
        f"--metrics-addr=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
    ]
    chart_env = {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}
    log = tmp_path / "operator.log"
    async with open_control_plane() as plane:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(chart_env, KUBECONFIG=str(plane.cp.kubeconfig_path))
        async with rayop_run(args, env, log) as proc, aiohttp.ClientSession() as session:

            async def probes_pass() -> bool:
                if proc.returncode is not None:
                    pytest.fail(f"rayop run exited {proc.returncode}:\n{log.read_text()[-3000:]}")
                metrics = await answers_200(session, f"http://127.0.0.1:{metrics_port}/metrics")
                ready = await answers_200(session, f"http://127.0.0.1:{probe_port}/readyz")
                return metrics and ready

            await eventually(probes_pass, timeout=60, what="the chart's probe and /readyz pass")
            for obj in sample_docs(SAMPLE):
                if obj.get("kind") == "RayCluster":
                    await plane.create(RAY_CLUSTERS, obj, "default")
                    name = obj["metadata"]["name"]
            await eventually(
                lambda: plane.raycluster_converged("default", name),
                timeout=60,
                what=f"{name} ready under KubeRay's chart args",
            )
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
            assert code == 0, log.read_text()[-3000:]
        first = log.read_text().splitlines()[0]
        assert first.startswith("{"), f"--log-stdout-encoder json: {first}"
