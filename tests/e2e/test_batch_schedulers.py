"""The batch scheduler samples converge on the embedded control plane, with the schedulers' CRDs
applied and rayop run with ``--batch-scheduler``; the objects follow the clusters' lifecycle.

Nothing simulates the schedulers (the embedded scheduler places pods whatever their
``schedulerName``), so what is checked is what the operator wrote: Volcano's PodGroups (created
with the RayJob, resized when a cluster scales, released when a RayJob finishes or is
suspended, collected with their owner, a foreign one left alone), scheduler-plugins' PodGroup,
and the pod labels, annotations and ``schedulerName`` of every scheduler.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.advise.exposition import Snapshot
from rayop.controllers.batchscheduler import scheduler_plugins, volcano
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.errors import AlreadyExists
from rayop.kube.resource import Resource
from rayop.kube.resources import CONFIGMAPS, CRDS, PODS, RAY_CLUSTERS, RAY_JOBS
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import eventually
from tests.kuberay_compat import sample_docs

from .rayjob_env import FAST_DASHBOARD, RayJobEnv, running_rayjob_operator

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120, func_only=True)]

Obj = dict[str, Any]
CRD_DIR = Path(__file__).resolve().parents[1] / "real" / "crds"
CACHE = Path(os.environ.get("RAYOP_CACHE_DIR") or Path.home() / ".cache" / "rayop")
PLUGINS_CRD = (
    CACHE / "batch-schedulers" / "scheduler-plugins-v0.33.5" / "scheduling.x-k8s.io_podgroups.yaml"
)
"""Fetched by ``scripts/batch-scheduler-crds`` (the real tier runs it; here it is only used)."""
QUEUES = {
    "scheduling.volcano.sh/v1beta1": Resource(
        "scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False
    ),
    "scheduling.run.ai/v2": Resource(
        "scheduling.run.ai", "v2", "queues", "Queue", namespaced=False
    ),
}
KINDS = {"RayCluster": RAY_CLUSTERS, "RayJob": RAY_JOBS, "ConfigMap": CONFIGMAPS}


@contextlib.asynccontextmanager
async def scheduler_env(
    scheduler: str, dashboard: DashboardConfig = FAST_DASHBOARD
) -> AsyncIterator[RayJobEnv]:
    """A plane with the schedulers' CRDs and rayop run with ``--batch-scheduler=<scheduler>``."""
    options = OperatorOptions(batch_scheduler=scheduler)
    async with running_rayjob_operator(options=options, dashboard=dashboard) as env:
        paths = [CRD_DIR / "volcano-scheduling.yaml", CRD_DIR / "kai-scheduler.yaml"]
        if PLUGINS_CRD.is_file():
            paths.append(PLUGINS_CRD)
        for path in paths:
            for crd in yaml.safe_load_all(path.read_text()):
                await env.plane.client.create(CRDS, crd)
        yield env


async def apply(env: RayJobEnv, docs: list[Obj], namespace: str) -> None:
    """Creates the documents as ``kubectl apply -f`` would (Queues are cluster-scoped)."""
    await env.plane.namespace(namespace)
    for doc in docs:
        queue = QUEUES.get(doc.get("apiVersion", ""))
        if queue is not None:
            with contextlib.suppress(AlreadyExists):
                await env.plane.client.create(queue, copy.deepcopy(doc))
            continue
        await env.plane.create(KINDS[doc["kind"]], doc, namespace)


def pod_groups(env: RayJobEnv, res: Resource, namespace: str) -> dict[str, Obj]:
    return {g["metadata"]["name"]: dict(g) for g in env.plane.objects(res, namespace)}


def pods(env: RayJobEnv, namespace: str) -> list[Obj]:
    return [dict(p) for p in env.plane.objects(PODS, namespace)]


async def test_volcano_samples_converge_and_pod_groups_follow_the_lifecycle() -> None:
    async with scheduler_env("volcano") as env:
        await apply(env, sample_docs("ray-job.volcano-scheduler-queue.yaml"), "job")
        await apply(env, sample_docs("ray-cluster.volcano-scheduler-queue.yaml"), "cluster")
        await env.wait_for_status("job", "rayjob-sample-0", "Complete", timeout=60)
        await eventually(
            lambda: env.plane.raycluster_converged("cluster", "test-cluster-0"),
            timeout=60,
            what="the volcano RayCluster sample converged",
        )
        # The finished RayJob's PodGroup keeps its live cluster, without the submitter's share
        # (the Complete pass after the transition releases it, as in KubeRay).
        await eventually(
            lambda: bool(env.plane.events("job", "BatchSchedulerCleanedUp")),
            timeout=30,
            what="the finished RayJob's PodGroup released",
        )
        job_group = pod_groups(env, volcano.PODGROUPS, "job")["ray-rayjob-sample-0-pg"]
        assert job_group["spec"] == {
            "minMember": 3,
            "minResources": {"cpu": "3", "memory": "4Gi"},
            "queue": "kuberay-test-queue",
        }
        for pod in pods(env, "job"):
            assert pod["spec"]["schedulerName"] == "volcano"
            annotations = pod["metadata"]["annotations"]
            assert annotations["scheduling.k8s.io/group-name"] == "ray-rayjob-sample-0-pg"
        # A scale resizes the cluster's PodGroup.
        group = pod_groups(env, volcano.PODGROUPS, "cluster")["ray-test-cluster-0-pg"]
        before = group["spec"]["minMember"]

        def scale(obj: Obj) -> None:
            worker = obj["spec"]["workerGroupSpecs"][0]
            worker["replicas"] = worker["maxReplicas"] = worker.get("replicas", 0) + 1

        await env.plane.edit(RAY_CLUSTERS, "cluster", "test-cluster-0", scale)

        def resized() -> bool:
            groups = pod_groups(env, volcano.PODGROUPS, "cluster")
            return bool(groups["ray-test-cluster-0-pg"]["spec"]["minMember"] == before + 1)

        await eventually(resized, timeout=30, what="the PodGroup resized after a scale")
        # Deleting the cluster collects its PodGroup (owner reference).
        await env.plane.client.delete(RAY_CLUSTERS, "test-cluster-0", namespace="cluster")
        await eventually(
            lambda: not pod_groups(env, volcano.PODGROUPS, "cluster"),
            timeout=30,
            what="the PodGroup collected with its RayCluster",
        )


async def test_a_suspended_rayjob_releases_its_queue_and_a_foreign_pod_group_is_kept() -> None:
    dashboard = DashboardConfig(job_pending_seconds=0.1, job_run_seconds=None)
    async with scheduler_env("volcano", dashboard) as env:
        job = next(
            d for d in sample_docs("ray-job.volcano-scheduler-queue.yaml") if d["kind"] == "RayJob"
        )
        others = [
            d for d in sample_docs("ray-job.volcano-scheduler-queue.yaml") if d["kind"] != "RayJob"
        ]
        job["spec"]["shutdownAfterJobFinishes"] = True  # KubeRay suspends only such RayJobs
        await apply(env, [*others, job], "job")
        await env.wait_for_status("job", "rayjob-sample-0", "Running", timeout=60)

        def suspend(obj: Obj) -> None:
            obj["spec"]["suspend"] = True

        await env.edit("job", "rayjob-sample-0", suspend)
        await env.wait_for_status("job", "rayjob-sample-0", "Suspended", timeout=60)
        group = pod_groups(env, volcano.PODGROUPS, "job")["ray-rayjob-sample-0-pg"]
        assert group["spec"] == {"minResources": {}, "queue": "kuberay-test-queue"}
        # A PodGroup of the name a RayJob would use, made by someone else, is never deleted.
        theirs = copy.deepcopy(job)
        theirs["metadata"]["name"] = "theirs"
        foreign = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "ray-theirs-pg", "namespace": "job"},
            "spec": {"minMember": 9, "queue": "elsewhere"},
        }
        await env.plane.client.create(volcano.PODGROUPS, foreign, namespace="job")
        await env.apply(theirs, "job")
        await env.wait_for_status("job", "theirs", "Running", timeout=60)
        kept = pod_groups(env, volcano.PODGROUPS, "job")["ray-theirs-pg"]
        assert kept["spec"]["queue"] == "elsewhere"  # updated in place (size), as KubeRay
        assert kept["spec"]["minMember"] == 3
        await env.plane.client.delete(RAY_JOBS, "theirs", namespace="job")
        await eventually(
            lambda: env.rayjob("job", "theirs") is None, timeout=30, what="RayJob deleted"
        )
        assert "ray-theirs-pg" in pod_groups(env, volcano.PODGROUPS, "job")


@pytest.mark.parametrize(
    ("scheduler", "file_name", "label"),
    [
        ("kai-scheduler", "ray-cluster.kai-scheduler.yaml", ("kai.scheduler/queue", "team-a")),
        ("kai-scheduler", "ray-cluster.kai-gpu-sharing.yaml", ("kai.scheduler/queue", "team-a")),
        ("yunikorn", "ray-cluster.yunikorn-scheduler.yaml", ("queue", "root.test")),
    ],
)
async def test_label_scheduler_samples_converge(
    scheduler: str, file_name: str, label: tuple[str, str]
) -> None:
    async with scheduler_env(scheduler) as env:
        docs = sample_docs(file_name)
        await apply(env, docs, "ns")
        name = next(d for d in docs if d["kind"] == "RayCluster")["metadata"]["name"]
        await eventually(
            lambda: env.plane.raycluster_converged("ns", name), timeout=60, what=f"{file_name}"
        )
        for pod in pods(env, "ns"):
            assert pod["spec"]["schedulerName"] == scheduler
            assert pod["metadata"]["labels"][label[0]] == label[1]


async def test_yunikorn_rayjob_sample_runs_with_task_groups() -> None:
    async with scheduler_env("yunikorn") as env:
        await apply(env, sample_docs("ray-job.yunikorn-scheduler.yaml"), "ns")
        await env.wait_for_status("ns", "rayjob-yunikorn-0", "Complete", timeout=60)
        submitter = env.batch_job("ns", "rayjob-yunikorn-0")
        assert submitter is not None
        template = submitter["spec"]["template"]
        assert template["spec"]["schedulerName"] == "yunikorn"
        annotations = template["metadata"]["annotations"]
        assert annotations["yunikorn.apache.org/task-group-name"] == "submittergroup"
        for pod in pods(env, "ns"):
            if pod["metadata"]["labels"].get("ray.io/node-type") == "head":
                assert "yunikorn.apache.org/task-groups" in pod["metadata"]["annotations"]


async def test_scheduler_plugins_sample_converges_with_its_pod_group() -> None:
    if not PLUGINS_CRD.is_file():
        pytest.skip("scheduler-plugins' CRD is not fetched: run scripts/batch-scheduler-crds")
    async with scheduler_env("scheduler-plugins") as env:
        await apply(env, sample_docs("ray-cluster.scheduler-plugins.yaml"), "ns")
        await eventually(
            lambda: env.plane.raycluster_converged("ns", "test-podgroup-0"),
            timeout=60,
            what="the scheduler-plugins sample converged",
        )
        group = pod_groups(env, scheduler_plugins.PODGROUPS, "ns")["test-podgroup-0"]
        assert group["spec"]["minMember"] == 3
        for pod in pods(env, "ns"):
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "test-podgroup-0"
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"


async def test_a_rayjob_under_scheduler_plugins_is_refused_without_a_crash() -> None:
    async with scheduler_env("scheduler-plugins") as env:
        await apply(env, sample_docs("ray-job.yunikorn-scheduler.yaml"), "ns")
        await env.wait_for_status("ns", "rayjob-yunikorn-0", "Initializing", timeout=30)

        def refusals() -> float:
            snapshot = Snapshot.from_registry(env.manager.metrics.registry)
            return snapshot.total(
                "controller_runtime_reconcile_total", controller="rayjob", result="error"
            )

        await eventually(lambda: refusals() >= 3, what="three rate-limited retries of the refusal")
        assert env.deployment_status("ns", "rayjob-yunikorn-0") == "Initializing"
        assert not env.plane.objects(RAY_CLUSTERS, "ns")  # KubeRay creates no cluster either
