"""Every KubeRay RayJob sample runs to completion on the embedded control plane.

All samples are applied at once (one namespace each) to one control plane running the RayCluster
and RayJob controllers; each parametrized test then waits for its sample. Samples that need a
user or a component the simulation does not run are driven by the test: InteractiveMode (the
user submits and sets ``spec.jobId``), SidecarMode (the head's submitter container) and
clusterSelector (the existing cluster is created first).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from rayop.testing import eventually
from tests.kuberay_compat import needs_material, sample_names, samples_dir

from .raycluster_env import load_sample
from .rayjob_env import (
    RayJobEnv,
    load_docs,
    play_sidecar,
    rayjob_sample_files,
    running_rayjob_operator,
)
from .sample_nodes import sample_kubelet

pytestmark = [pytest.mark.asyncio(loop_scope="module"), needs_material]

SAMPLE_FILES = sample_names(rayjob_sample_files)
INTERACTIVE_JOB_ID = "my-interactive-job"


@dataclass
class Samples:
    env: RayJobEnv
    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Sample file -> (namespace, RayJob name)."""
    drivers: list[asyncio.Task[Any]] = field(default_factory=list)


def namespace_of(file_name: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", file_name.removesuffix(".yaml").lower())[:63].strip("-")


async def _play_user(env: RayJobEnv, namespace: str, name: str) -> None:
    """The InteractiveMode user: submit with ``ray job submit``, then set ``spec.jobId``."""
    await env.wait_for_status(namespace, name, "Waiting")
    cluster = env.status(namespace, name)["rayClusterName"]
    dash = env.cp.dashboards.for_cluster(namespace, cluster)
    assert dash is not None
    dash.submit_job({"entrypoint": "python my_script.py", "submission_id": INTERACTIVE_JOB_ID})

    def set_job_id(obj: dict[str, Any]) -> None:
        obj["spec"]["jobId"] = INTERACTIVE_JOB_ID

    await env.edit(namespace, name, set_job_id)


async def _apply(samples: Samples, file_name: str) -> None:
    env = samples.env
    namespace = namespace_of(file_name)
    rayjob = load_docs(file_name, "RayJob")[0]
    selected = (rayjob["spec"].get("clusterSelector") or {}).get("ray.io/cluster")
    if selected:
        existing = load_sample("ray-cluster.sample.yaml")[0]
        existing["metadata"]["name"] = selected
        await env.apply_cluster(existing, namespace)
    created = await env.apply(rayjob, namespace)
    name = created["metadata"]["name"]
    samples.names[file_name] = (namespace, name)
    mode = rayjob["spec"].get("submissionMode")
    if mode == "InteractiveMode":
        samples.drivers.append(asyncio.create_task(_play_user(env, namespace, name)))
    elif mode == "SidecarMode":
        samples.drivers.append(asyncio.create_task(play_sidecar(env, namespace, name)))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def samples() -> AsyncIterator[Samples]:
    kubelet = sample_kubelet(samples_dir() / f for f in SAMPLE_FILES)  # their TPU and GPU nodes
    async with running_rayjob_operator(kubelet=kubelet) as env:
        applied = Samples(env)
        await asyncio.gather(*(_apply(applied, f) for f in SAMPLE_FILES))
        yield applied
        for task in applied.drivers:
            task.cancel()


async def test_every_rayjob_sample_is_covered() -> None:
    assert len(SAMPLE_FILES) >= 15


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
async def test_sample_completes(samples: Samples, file_name: str) -> None:
    env = samples.env
    namespace, name = samples.names[file_name]
    status = await env.wait_for_status(namespace, name, "Complete", "Failed", timeout=40)
    assert status["jobDeploymentStatus"] == "Complete", status
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["succeeded"] == 1 and status["failed"] == 0
    assert status["startTime"] and status["endTime"]
    assert status["rayJobInfo"]["startTime"] and status["rayJobInfo"]["endTime"]
    rayjob = env.rayjob(namespace, name)
    assert rayjob is not None
    assert "ray.io/rayjob-finalizer" in rayjob["metadata"]["finalizers"]
    spec = rayjob["spec"]
    assert env.submissions(namespace) == [status["jobId"]]
    if spec.get("clusterSelector"):
        assert env.cluster_creates(namespace) == [spec["clusterSelector"]["ray.io/cluster"]]
        return
    assert env.cluster_creates(namespace) == [status["rayClusterName"]]
    assert re.fullmatch(rf"{re.escape(name)}-[a-z0-9]{{5}}", status["rayClusterName"])
    cluster = env.raycluster(namespace, status["rayClusterName"])
    if not spec.get("shutdownAfterJobFinishes"):
        assert cluster is not None
        labels = cluster["metadata"]["labels"]
        assert labels["ray.io/originated-from-cr-name"] == name
        assert labels["ray.io/originated-from-crd"] == "RayJob"
        assert labels["ray.io/job-submission-mode"] == spec["submissionMode"]
        assert cluster["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    if spec["submissionMode"] == "K8sJobMode":
        submitter = env.batch_job(namespace, name)
        assert submitter is not None
        assert submitter["metadata"]["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
        container = submitter["spec"]["template"]["spec"]["containers"][0]
        env_vars = {e["name"]: e.get("value") for e in container["env"]}
        assert env_vars["RAY_JOB_SUBMISSION_ID"] == status["jobId"]
        assert env_vars["RAY_DASHBOARD_ADDRESS"] == status["dashboardURL"]
    if spec["submissionMode"] == "InteractiveMode":
        assert status["jobId"] == INTERACTIVE_JOB_ID


async def test_existing_cluster_is_kept(samples: Samples) -> None:
    env = samples.env
    namespace, name = samples.names["ray-job.use-existing-raycluster.yaml"]
    await env.wait_for_status(namespace, name, "Complete", timeout=40)
    await eventually(lambda: env.raycluster(namespace, "ray-cluster-kuberay") is not None)
    cluster = env.raycluster(namespace, "ray-cluster-kuberay")
    assert cluster is not None and not cluster["metadata"].get("deletionTimestamp")


async def test_no_sample_races_the_cache_behind_its_own_writes(samples: Samples) -> None:
    """Once every sample has finished, none of their RayJobs ever had a write refused with 409:
    each pass waited for the cache to show the controller's own previous write."""
    env = samples.env
    for namespace, name in samples.names.values():
        await env.wait_for_status(namespace, name, "Complete", "Failed", timeout=40)
    refused = [
        (w.namespace, w.name, w.verb, w.subresource)
        for w in env.cp.audit.writes
        if w.resource == "rayjobs" and w.code == 409
    ]
    assert refused == []
