"""End-to-end support for RayJob tests: the kit's plane running the RayCluster AND RayJob
controllers.

:func:`running_rayjob_operator` starts the test kit's embedded control plane (fast kubelet,
short simulated job runs, CRDs) and rayop's operator with both controllers on it. Tests act as
users through the API and observe the store, the audit and the simulated dashboards.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from rayop.api.common import format_time
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import JOBS, PODS, RAY_CLUSTERS, RAY_JOBS
from rayop.sim.apiserver.faults import Faults
from rayop.sim.dashboard.head import DashboardConfig
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import FAST_KUBELET, eventually
from rayop.testing.operator import ReconcileWrapper
from tests.kuberay_compat import sample_docs, samples_dir

from .operator_env import E2eEnv, open_env

__all__ = ["RayJobEnv", "running_rayjob_operator"]

Obj = dict[str, Any]
FAST_DASHBOARD = DashboardConfig(
    job_pending_seconds=0.1, job_run_seconds=0.5, job_stop_seconds=0.1, submitter_poll_seconds=0.1
)
FAILING_ENTRYPOINT = 'python -c "import sys; sys.exit(1)"'


class RayJobEnv(E2eEnv):
    """A running plane, a user client, and the RayCluster and RayJob controllers."""

    def rayjob(self, namespace: str, name: str) -> Obj | None:
        """Returns the stored RayJob, or None."""
        return self.stored(RAY_JOBS, namespace, name)

    def status(self, namespace: str, name: str) -> Obj:
        """Returns the stored RayJob's status ({} when it has none or is gone)."""
        return (self.rayjob(namespace, name) or {}).get("status") or {}

    def raycluster(self, namespace: str, name: str) -> Obj | None:
        """Returns the stored RayCluster, or None."""
        return self.stored(RAY_CLUSTERS, namespace, name)

    def batch_job(self, namespace: str, name: str) -> Obj | None:
        """Returns the stored batch Job, or None."""
        return self.stored(JOBS, namespace, name)

    def cluster_creates(self, namespace: str) -> list[str]:
        """Returns the names of the RayClusters successfully created in ``namespace``."""
        return [
            w.name
            for w in self.cp.audit.writes
            if w.verb == "create" and w.resource == "rayclusters" and w.namespace == namespace
            and w.code == 201
        ]  # fmt: skip

    def submissions(self, namespace: str) -> list[str]:
        """Returns the submission ids accepted by the simulated dashboards in ``namespace``."""
        return [s.submission_id for s in self.cp.dashboards.submissions if s.namespace == namespace]

    def deployment_status(self, namespace: str, name: str) -> str:
        """Returns ``status.jobDeploymentStatus`` ("" when unset)."""
        return str(self.status(namespace, name).get("jobDeploymentStatus") or "")

    async def wait_for_status(
        self, namespace: str, name: str, *wanted: str, timeout: float = 25.0
    ) -> Obj:
        """Blocks until the RayJob's deployment status is one of ``wanted``; returns the status."""
        try:
            await eventually(
                lambda: self.deployment_status(namespace, name) in wanted, timeout=timeout
            )
        except AssertionError:
            pytest.fail(
                f"RayJob {namespace}/{name} not in {wanted} after {timeout} s: "
                f"{self.status(namespace, name)}"
            )
        return self.status(namespace, name)

    async def apply(self, rayjob: Obj, namespace: str) -> Obj:
        """Creates a RayJob in ``namespace``."""
        return await self.plane.create(RAY_JOBS, rayjob, namespace)

    async def apply_cluster(self, raycluster: Obj, namespace: str) -> Obj:
        """Creates a RayCluster in ``namespace``."""
        return await self.plane.create(RAY_CLUSTERS, raycluster, namespace)

    async def edit(self, namespace: str, name: str, mutate: Callable[[Obj], None]) -> Obj:
        """Read-modify-writes a RayJob's spec/metadata, again on a conflict."""
        return await self.plane.edit(RAY_JOBS, namespace, name, mutate)


def load_docs(file_name: str, kind: str) -> list[Obj]:
    """Returns the documents of one kind in a KubeRay sample file."""
    return [d for d in sample_docs(file_name) if d.get("kind") == kind]


def rayjob_sample_files() -> list[str]:
    """Returns the KubeRay sample files that contain a RayJob."""
    return sorted(
        p.name for p in samples_dir().glob("ray-job*.yaml") if load_docs(p.name, "RayJob")
    )


def small_rayjob(name: str, *, entrypoint: str = "python -c 'print(1)'", **spec: Any) -> Obj:
    """Returns a RayJob with a one-worker cluster."""
    image = "rayproject/ray:2.52.0"
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": entrypoint,
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-head", "image": image}]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": 1,
                        "minReplicas": 0,
                        "maxReplicas": 4,
                        "rayStartParams": {},
                        "template": {
                            "spec": {"containers": [{"name": "ray-worker", "image": image}]}
                        },
                    }
                ],
            },
            **spec,
        },
    }


@contextlib.asynccontextmanager
async def running_rayjob_operator(
    *,
    kubelet: KubeletConfig = FAST_KUBELET,
    dashboard: DashboardConfig = FAST_DASHBOARD,
    faults: Faults | None = None,
    concurrency: int = 4,
    options: OperatorOptions | None = None,
    wrap_reconcile: ReconcileWrapper | None = None,
    **plane_options: Any,
) -> AsyncIterator[RayJobEnv]:
    """Starts a control plane with CRDs and both controllers; stops everything on exit.

    ``plane_options`` go to :class:`~rayop.sim.controlplane.EmbeddedControlPlane` as they are.
    """
    plane = {"kubelet": kubelet, "dashboard": dashboard, "faults": faults, **plane_options}
    operator = {
        "controllers": ("RayCluster", "RayJob"),
        "concurrency": concurrency,
        "options": options,
        "wrap_reconcile": wrap_reconcile,
    }
    async with open_env(RayJobEnv, plane=plane, operator=operator) as env:
        yield env


async def play_sidecar(env: RayJobEnv, namespace: str, name: str, *, timeout: float = 25.0) -> None:
    """Plays the SidecarMode ``ray-job-submitter`` container, which the simulated kubelet does
    not run: once the head's dashboard is up it submits the RayJob's job, waits until the job is
    terminal, then marks the container terminated (exit 1 when the job FAILED, as
    ``ray job submit`` does when it streams the logs)."""

    def dashboard() -> Any:
        cluster = env.status(namespace, name).get("rayClusterName")
        return env.cp.dashboards.for_cluster(namespace, cluster) if cluster else None

    await eventually(lambda: dashboard() is not None, timeout=timeout, what="the head's dashboard")
    job_id = env.status(namespace, name)["jobId"]
    cluster = env.status(namespace, name)["rayClusterName"]
    spec = (env.rayjob(namespace, name) or {})["spec"]
    dash = dashboard()
    dash.submit_job({"entrypoint": spec["entrypoint"], "submission_id": job_id, "metadata": {}})
    await eventually(
        lambda: dash.job_status(job_id) in ("SUCCEEDED", "FAILED", "STOPPED"), timeout=timeout
    )
    code = 1 if dash.job_status(job_id) == "FAILED" else 0
    pods = await env.client.list(
        PODS, namespace=namespace, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
    )
    pod = pods["items"][0]
    for status in pod["status"]["containerStatuses"]:
        if status["name"] == "ray-job-submitter":
            now = format_time(datetime.now(UTC))
            reason = "Completed" if code == 0 else "Error"
            terminated = {"exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now}
            status.update(state={"terminated": terminated}, ready=False, started=False)
    await env.client.update_status(PODS, pod)
