"""A SidecarMode RayJob with the ``SidecarSubmitterRestart`` gate on, whose Ray job FAILS, on
real Ray: it ends Failed with AppFailed as soon as its submitter has finished.

With the gate on the submitter follows the job with ``ray job logs --follow``, which exits 0
whatever the job's end (``ray job submit`` without ``--no-wait`` exits 1 on a FAILED job), so the
container ends Completed and the RayJob must read the job's FAILED status from the dashboard. The
head pod is no longer Ready then (its submitter container has terminated); the dashboard is still
reached through the head Service, which publishes not-ready addresses. It used to stay Running
for minutes: the plane's Services ignored ``publishNotReadyAddresses``, and rayop's 30 s
submitter-finished timeout skipped a job whose last read status was terminal (KubeRay's does not).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rayop.kube.resources import PODS, RAY_JOBS
from rayop.testing import PlaneUnderTest, RunningOperator, eventually, open_operator
from rayop.testing.operator import ALL_KINDS

pytestmark = pytest.mark.realray

JOB: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "sidecar-fails"},
    "spec": {
        "submissionMode": "SidecarMode",
        "entrypoint": "python -c \"import sys; print('about to fail'); sys.exit(3)\"",
        "rayClusterSpec": {
            "rayVersion": "2.60.0",
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": "1"},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.60.0",
                                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                            }
                        ]
                    }
                },
            },
        },
    },
}


@pytest.fixture
async def gated_operator(plane: PlaneUnderTest) -> AsyncIterator[RunningOperator]:
    """rayop with ``SidecarSubmitterRestart`` on."""
    gates = {"SidecarSubmitterRestart": True}
    async with open_operator(plane, controllers=ALL_KINDS, feature_gates=gates) as op:
        yield op


async def test_a_failed_ray_job_fails_the_rayjob_once_its_submitter_finished(
    plane: PlaneUnderTest, gated_operator: RunningOperator
) -> None:
    await plane.namespace("sidecar")
    await plane.create(RAY_JOBS, JOB, "sidecar")
    status: dict[str, Any] = {}

    async def submitter_finished() -> bool:
        pods = await plane.client.list(
            PODS, namespace="sidecar", label_selector="ray.io/node-type=head"
        )
        for pod in pods["items"]:
            for container in (pod.get("status") or {}).get("containerStatuses") or []:
                if container["name"] == "ray-job-submitter":
                    status.update(container)
        return "terminated" in (status.get("state") or {})

    await eventually(
        submitter_finished, timeout=300, interval=1.0, what="the submitter container finished"
    )
    finished = time.monotonic()
    assert status["state"]["terminated"]["exitCode"] == 0, status  # ray job logs --follow
    assert status["restartCount"] == 0

    async def ended() -> bool:
        job = await plane.client.get(RAY_JOBS, "sidecar-fails", namespace="sidecar")
        return (job.get("status") or {}).get("jobDeploymentStatus") in ("Failed", "Complete")

    await eventually(ended, timeout=60, interval=0.5, what="the RayJob Failed")
    job = await plane.client.get(RAY_JOBS, "sidecar-fails", namespace="sidecar")
    assert job["status"]["jobDeploymentStatus"] == "Failed"
    assert job["status"]["jobStatus"] == "FAILED"
    assert job["status"]["reason"] == "AppFailed", job["status"]
    assert time.monotonic() - finished < 20  # read from the dashboard, not the 30 s timeout
