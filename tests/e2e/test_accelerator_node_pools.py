"""KubeRay's TPU multi-host and GPU samples on the embedded plane, with and without node pools.

``rayop up --node-pool tpu-v6e-16`` / ``--node-pool nvidia-tesla-t4`` (here: the same
:class:`~rayop.cli.control_plane_flags.ControlPlaneFlags` turned into a plane's settings) give
the plane GKE's accelerator nodes: labelled, tainted, with ``google.com/tpu`` or
``nvidia.com/gpu`` allocatable, and pods requesting them tolerate the taints as on GKE. The
samples' RayJobs then complete with their pods on those nodes. Without the pools the pods that
select them stay Pending with kube-scheduler's FailedScheduling message, as on a cluster without
such nodes. KubeRay's samples are read through tests/kuberay_compat.py (skipped without them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rayop.cli.control_plane_flags import ControlPlaneFlags
from rayop.kube.resources import PODS
from rayop.testing import FAST_KUBELET, eventually
from tests.kuberay_compat import needs_material

from .rayjob_env import RayJobEnv, load_docs, running_rayjob_operator

TPU_SAMPLE = "ray-job.tpu-v6e-16-multihost.yaml"
GPU_SAMPLE = "ray-job.batch-inference.yaml"
NOT_MATCHED = (
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: "
    "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
Obj = dict[str, Any]

pytestmark = needs_material


def plane_settings(*flags: tuple[str, ...]) -> dict[str, Any]:
    """The plane options ``rayop up`` would build from ``--node-pool``/``--node-file`` values."""
    pools = [value for kind, value in flags if kind == "pool"]
    files = [Path(value) for kind, value in flags if kind == "file"]
    cp = ControlPlaneFlags(node_pool=pools, node_file=files).control_plane(
        kubelet=FAST_KUBELET, tls=False
    )
    return {
        "kubelet": cp.kubelet_config,
        "extended_resource_toleration": cp.extended_resource_toleration,
    }


@dataclass
class Applied:
    env: RayJobEnv
    namespace: str
    name: str

    def pods(self, node_type: str) -> list[Obj]:
        return [
            p
            for p in self.env.objects(PODS, self.namespace)
            if (p["metadata"].get("labels") or {}).get("ray.io/node-type") == node_type
        ]


def stored_node(env: RayJobEnv, name: str) -> Obj:
    store = env.plane.cp.store
    nodes = store.resources.get("", "v1", "nodes")
    assert nodes is not None
    node = store.peek(nodes, "", name)
    assert node is not None, f"no node {name}"
    return dict(node)


async def apply_sample(env: RayJobEnv, file_name: str, namespace: str) -> Applied:
    rayjob = load_docs(file_name, "RayJob")[0]
    created = await env.apply(rayjob, namespace)
    return Applied(env, namespace, created["metadata"]["name"])


@pytest.fixture
async def tpu_pool() -> AsyncIterator[RayJobEnv]:
    async with running_rayjob_operator(**plane_settings(("pool", "tpu-v6e-16"))) as env:
        yield env


@pytest.fixture
async def gpu_pool() -> AsyncIterator[RayJobEnv]:
    async with running_rayjob_operator(**plane_settings(("pool", "nvidia-tesla-t4"))) as env:
        yield env


@pytest.fixture
async def no_pool() -> AsyncIterator[RayJobEnv]:
    async with running_rayjob_operator(**plane_settings()) as env:
        yield env


async def test_tpu_multihost_sample_completes_on_a_v6e_slice(tpu_pool: RayJobEnv) -> None:
    job = await apply_sample(tpu_pool, TPU_SAMPLE, "tpu")
    status = await tpu_pool.wait_for_status("tpu", job.name, "Complete", "Failed", timeout=40)
    assert status["jobDeploymentStatus"] == "Complete" and status["jobStatus"] == "SUCCEEDED"
    workers = job.pods("worker")
    assert len(workers) == 4  # numOfHosts 4: one pod per host of the 4x4 slice
    hosts = sorted(p["spec"]["nodeName"] for p in workers)
    assert hosts == [f"tpu-v6e-16-0-{i}" for i in range(4)]
    for pod in workers:
        assert {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
            "spec"
        ]["tolerations"]
    (head,) = job.pods("head")
    assert head["spec"]["nodeName"].startswith("sim-node-")  # untainted nodes take the rest
    assert "tolerations" not in head["spec"]
    node = stored_node(tpu_pool, "tpu-v6e-16-0-2")
    assert node["status"]["allocatable"]["google.com/tpu"] == "4"
    assert node["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert node["spec"]["taints"] == [
        {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
    ]


async def test_gpu_sample_completes_on_a_t4_node(gpu_pool: RayJobEnv) -> None:
    job = await apply_sample(gpu_pool, GPU_SAMPLE, "gpu")
    status = await gpu_pool.wait_for_status("gpu", job.name, "Complete", "Failed", timeout=40)
    assert status["jobDeploymentStatus"] == "Complete" and status["jobStatus"] == "SUCCEEDED"
    (head,) = job.pods("head")
    assert head["spec"]["nodeName"] == "nvidia-tesla-t4-0"
    assert head["status"]["phase"] in ("Running", "Succeeded")


async def test_without_a_pool_the_accelerator_pods_stay_pending(no_pool: RayJobEnv) -> None:
    tpu = await apply_sample(no_pool, TPU_SAMPLE, "tpu")
    gpu = await apply_sample(no_pool, GPU_SAMPLE, "gpu")

    def refused(applied: Applied, node_type: str, count: int) -> bool:
        pods = applied.pods(node_type)
        notes = {e["note"] for e in no_pool.events(applied.namespace, "FailedScheduling")}
        judged = all(  # the scheduler's status write can trail the event of another pod
            any(c["type"] == "PodScheduled" for c in p.get("status", {}).get("conditions", []))
            for p in pods
        )
        return len(pods) == count and notes == {NOT_MATCHED} and judged

    await eventually(lambda: refused(tpu, "worker", 4), timeout=20, what="TPU hosts refused")
    await eventually(lambda: refused(gpu, "head", 1), timeout=20, what="GPU head refused")
    for pod in [*tpu.pods("worker"), *gpu.pods("head")]:
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
        (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
        assert scheduled["message"] == NOT_MATCHED
    assert no_pool.deployment_status("tpu", tpu.name) == "Initializing"
    assert no_pool.deployment_status("gpu", gpu.name) == "Initializing"
