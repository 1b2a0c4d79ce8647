"""Differential test: KubeRay v1.7.0 run with ``--config`` and rayop given the same Configuration
build the same pods (sidecars, default env vars, labels and annotations) on a real control plane.

KubeRay reads the Configuration file (its operator settings too: the watched namespace, no
leader election, no endpoints); rayop gets the same file's pod defaults through
:func:`~rayop.controllers.config.configuration_file.parse_configuration`. Pods and services are
normalised and diffed as in ``test_differential_kuberay.py``, with its known differences.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.controllers.config.configuration_file import parse_configuration
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.resources import PODS, SERVICES

from .differential import diff, snapshot
from .real_support import (
    apply_raycluster,
    converged,
    create_namespace,
    kuberay_running,
    load_sample,
    rayop_operator,
    user_client,
)
from .test_differential_kuberay import unexplained

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(180, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

SAMPLE_FILES = (
    "ray-cluster.sample.yaml",
    "ray-cluster.autoscaler-v2.yaml",
    "ray-cluster.auth.yaml",
)
CONVERGE_TIMEOUT = 120.0
POD_DEFAULTS = """\
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
  args: ["--config", "/fluent-bit/etc/fluent-bit.conf"]
  resources:
    limits: {cpu: 100m, memory: 128Mi}
  env:
  - name: SHIPPER_ROLE
    value: head
workerSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
  ports:
  - name: http
    containerPort: 2020
- name: cost-agent
  image: example.com/cost-agent:1
defaultContainerEnvs:
- name: RAY_enable_open_telemetry
  value: "true"
- name: RAY_metric_cardinality_level
  value: recommended
- name: POD_NAME_COPY
  valueFrom:
    fieldRef: {fieldPath: metadata.name}
defaultPodLabels:
  team: platform
  app.kubernetes.io/name: not-kuberays
defaultPodAnnotations:
  prometheus.io/scrape: "true"
  ray.io/ft-enabled: "true"
"""


def kuberay_config(namespaces: list[str]) -> str:
    """Returns the file KubeRay runs with: the operator settings and the shared pod defaults."""
    return (
        "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"
        f'metricsAddr: "0"\nprobeAddr: "0"\nenableLeaderElection: false\n'
        f'reconcileConcurrency: 4\nwatchNamespace: "{",".join(namespaces)}"\n' + POD_DEFAULTS
    )


async def _run_samples(client: KubeClient, namespaces: dict[str, str]) -> dict[str, Any]:
    for file_name, ns in namespaces.items():
        for raycluster in load_sample(file_name):
            await apply_raycluster(client, raycluster, ns)
    pending = {(f, rc["metadata"]["name"]) for f in namespaces for rc in load_sample(f)}
    deadline = asyncio.get_running_loop().time() + CONVERGE_TIMEOUT
    while pending and asyncio.get_running_loop().time() < deadline:
        for file_name, name in sorted(pending):
            if await converged(client, namespaces[file_name], name):
                pending.discard((file_name, name))
        await asyncio.sleep(0.5)
    assert not pending, f"not converged: {sorted(pending)}"
    await asyncio.sleep(2.0)  # let late writes land
    out = {}
    for file_name, ns in namespaces.items():
        pods = (await client.list(PODS, namespace=ns))["items"]
        services = (await client.list(SERVICES, namespace=ns))["items"]
        out[file_name] = snapshot(pods, services)
    return out


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def snapshots(
    real_kubeconfig: str, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, tuple[Any, Any]]]:
    """Runs KubeRay with ``--config``, then rayop with the same pod defaults, over the samples."""
    token = secrets.token_hex(2)
    kuberay_ns = {f: f"kr-config-{token}-{i}" for i, f in enumerate(SAMPLE_FILES)}
    rayop_ns = {f: f"ro-config-{token}-{i}" for i, f in enumerate(SAMPLE_FILES)}
    work = tmp_path_factory.mktemp("kuberay-config")
    config_path = work / "config.yaml"
    config_path.write_text(kuberay_config(list(kuberay_ns.values())))
    log_path = work / "ray-operator.log"
    async with user_client(real_kubeconfig) as client:
        for ns in [*kuberay_ns.values(), *rayop_ns.values()]:
            await create_namespace(client, ns)
        # With --config, KubeRay ignores its flags (those the helper adds too): the file rules.
        async with kuberay_running(
            kuberay_binary, real_kubeconfig, log_path, f"--config={config_path}"
        ):
            kuberay = await _run_samples(client, kuberay_ns)
        defaults = parse_configuration(kuberay_config([])).pod_defaults()
        options = dataclasses.replace(OperatorOptions(), pod_defaults=defaults)
        async with rayop_operator(
            real_kubeconfig, watch_namespaces=list(rayop_ns.values()), options=options
        ):
            rayop = await _run_samples(client, rayop_ns)
    yield {f: (kuberay[f], rayop[f]) for f in SAMPLE_FILES}


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_same_pods_as_kuberay_under_the_same_configuration(
    snapshots: dict[str, tuple[Any, Any]], file_name: str
) -> None:
    kuberay, rayop = snapshots[file_name]
    head = kuberay["pods"]["head"][0]
    assert head["spec"]["containers"][-1]["name"] == "fluentbit", "KubeRay applied no sidecar"
    assert head["metadata"]["labels"]["team"] == "platform"
    lines = unexplained(diff(kuberay, rayop))
    assert not lines, f"{file_name}:\n" + "\n".join(lines)
