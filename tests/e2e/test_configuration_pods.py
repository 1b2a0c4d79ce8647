"""KubeRay's Configuration on the embedded plane: every Ray pod gets the sidecar, the default env
var, label and annotation, and keeps what the user set.

One test runs the operator in process with the Configuration's pod defaults; the other runs
``rayop run --config`` as a process against the plane, so the file, the command line and the
pod builders are all on the path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.config.configuration_file import parse_configuration
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.testing import PlaneUnderTest, eventually, open_control_plane, open_operator

from .raycluster_env import load_sample

pytestmark = pytest.mark.timeout(120)

Obj = dict[str, Any]

CONFIG = """\
apiVersion: config.ray.io/v1alpha1
kind: Configuration
enableLeaderElection: false
metricsAddr: "0"
probeAddr: "0"
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
workerSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
defaultContainerEnvs:
- name: RAY_enable_open_telemetry
  value: "true"
defaultPodLabels:
  team: platform
defaultPodAnnotations:
  prometheus.io/scrape: "true"
"""


def _pods(plane: PlaneUnderTest, ns: str) -> list[Obj]:
    return [p for p in plane.objects(PODS, ns) if not p["metadata"].get("deletionTimestamp")]


async def _apply_sample_and_wait(plane: PlaneUnderTest, ns: str) -> list[Obj]:
    await plane.namespace(ns)
    (cluster,) = load_sample("ray-cluster.sample.yaml")
    await plane.create(RAY_CLUSTERS, cluster, ns)
    want = 1 + sum(int(g.get("replicas", 0)) for g in cluster["spec"]["workerGroupSpecs"])
    await eventually(lambda: len(_pods(plane, ns)) >= want, timeout=40, what="head and workers")
    return _pods(plane, ns)


def _assert_defaults_applied(pods: list[Obj]) -> None:
    kinds = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert kinds[0] == "head" and kinds[1:] and set(kinds[1:]) == {"worker"}
    for pod in pods:
        meta, containers = pod["metadata"], pod["spec"]["containers"]
        sidecar = containers[-1]  # the API server defaults a few fields (pull policy, ...)
        assert (sidecar["name"], sidecar["image"]) == ("fluentbit", "fluent/fluent-bit:1.9.6")
        assert len(containers) == 2
        env = {e["name"]: e.get("value") for e in containers[0]["env"]}
        assert env["RAY_enable_open_telemetry"] == "true"
        assert "env" not in sidecar  # default env vars go on the Ray container only
        assert meta["labels"]["team"] == "platform"
        assert meta["labels"]["ray.io/cluster"] == "raycluster-kuberay"  # KubeRay's own kept
        assert meta["annotations"]["prometheus.io/scrape"] == "true"


async def test_the_configurations_pod_defaults_reach_head_and_worker_pods() -> None:
    options = OperatorOptions(pod_defaults=parse_configuration(CONFIG).pod_defaults())
    async with open_control_plane() as plane, open_operator(plane, options=options):
        _assert_defaults_applied(await _apply_sample_and_wait(plane, "in-process"))


@contextlib.asynccontextmanager
async def rayop_run(*args: str, log: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """Runs ``rayop run`` with ``args``; stops it with SIGTERM when the block exits."""
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "rayop", "run", *args,
            stdout=out, stderr=asyncio.subprocess.STDOUT, env={**os.environ},
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


async def test_rayop_run_with_config_puts_the_defaults_on_pods(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    log = tmp_path / "rayop.log"
    async with (
        open_control_plane() as plane,
        rayop_run(
            f"--kubeconfig={plane.cp.kubeconfig_path}", f"--config={config}", log=log
        ) as proc,
    ):
        pods = await _apply_sample_and_wait(plane, "from-file")
        assert proc.returncode is None, log.read_text()[-3000:]
    _assert_defaults_applied(pods)
    assert "loaded the Configuration file" in log.read_text()
