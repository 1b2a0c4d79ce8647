"""The dashboard client's contract, held against the simulated dashboard and a real Ray head.

The same calls and assertions run twice: against the embedded plane's simulated head (fast
tier) and, in the real-Ray tier (``pytest -m realray``, ``scripts/test-realray``), against a
real Ray 2.60 head started by the ``--real-ray`` kubelet, both reached through the API server's
services proxy. Whatever the simulator answers differently from Ray fails here, so it cannot
drift from Ray unnoticed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rayop.controllers.dashboard.client import (
    DashboardClient,
    DashboardError,
    JobNotFound,
    SubmissionIdConflict,
)
from rayop.controllers.dashboard.models import JobInfo, JobSubmitRequest
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import PODS, SERVICES
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.dashboard.head import DashboardConfig
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.sim.nodes.processes.ray_install import RayNotInstalled, find_ray

NS = "default"
RAY_ENV = os.environ.get("RAYOP_RAY_ENV") or str(  # where scripts/ray-env installs it
    Path(
        os.environ.get("RAYOP_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rayop"
    )
    / "ray"
    / "2.60.0"
)
SIM_DASHBOARD = DashboardConfig(
    job_pending_seconds=0.05, job_run_seconds=1.0, job_stop_seconds=0.05
)
RAY_START = (
    "ulimit -n 65536; ray start --head --block --dashboard-host=0.0.0.0 --num-cpus=1 "
    "--dashboard-agent-listen-port=52365"
)


def _head(real: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {"ray.io/cluster": "contract", "ray.io/node-type": "head"}
    container: dict[str, Any] = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "ports": [{"name": "dashboard", "containerPort": 8265}],
    }
    if real:
        container.update(command=["/bin/bash", "-lc", "--"], args=[RAY_START])
    pod = {
        "metadata": {"name": "contract-head", "labels": labels},
        "spec": {"containers": [container]},
    }
    svc = {
        "metadata": {"name": "contract-head-svc", "labels": labels},
        "spec": {
            "selector": labels,
            "ports": [{"name": "dashboard", "port": 8265, "targetPort": 8265}],
        },
    }
    return pod, svc


@pytest.fixture(
    params=[
        "simulated",
        pytest.param("ray", marks=[pytest.mark.realray, pytest.mark.timeout(600)]),
    ]
)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[DashboardClient]:
    """A dashboard client through the services proxy to a ready head of the backend."""
    real = request.param == "ray"
    if real:
        try:
            find_ray(RAY_ENV)
        except RayNotInstalled as exc:
            pytest.fail(f"{exc} (scripts/test-realray installs it)")
        kubelet = KubeletConfig(real_ray=True, ray_env=RAY_ENV)
    else:
        kubelet = KubeletConfig(running_delay=0.01, ready_delay=0.01)
    async with EmbeddedControlPlane(kubelet=kubelet, dashboard=SIM_DASHBOARD) as cp:
        config = await load_config(kubeconfig=cp.kubeconfig_path)
        async with KubeClient(config, qps=-1) as kube:
            pod, svc = _head(real)
            await kube.create(SERVICES, svc, namespace=NS)
            await kube.create(PODS, pod, namespace=NS)
            dashboard = DashboardClient.via_proxy(kube, namespace=NS, service="contract-head-svc")
            await _wait_healthy(dashboard, timeout=300 if real else 10)
            await _warm_up(dashboard)
            yield dashboard


async def _wait_healthy(client: DashboardClient, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while True:
            try:
                if await client.check_gcs_health():
                    return
            except DashboardError:
                pass
            await asyncio.sleep(0.5)


async def _warm_up(client: DashboardClient) -> None:
    """Runs one job to its end and deletes it: a fresh Ray head accepts its first submission
    only once its job agent has registered, which can outlast the client's 10 s timeout."""
    async with asyncio.timeout(240):
        while True:
            try:
                await client.submit_job(JobSubmitRequest(entrypoint="true", submission_id="warm"))
                break
            except SubmissionIdConflict:
                break
            except DashboardError:
                await asyncio.sleep(1.0)
    await _wait_job(client, "warm", "SUCCEEDED")
    await _delete(client, "warm")


async def _delete(client: DashboardClient, job_id: str) -> None:
    """Deletes a finished job and waits until it is gone."""
    async with asyncio.timeout(60):
        while True:
            await client.delete_job(job_id)
            try:
                await client.get_job_info(job_id)
            except JobNotFound:
                return
            await asyncio.sleep(1.0)


async def _wait_job(client: DashboardClient, job_id: str, status: str) -> JobInfo:
    async with asyncio.timeout(240):
        while True:
            info = await client.get_job_info(job_id)
            if info.status == status:
                return info
            await asyncio.sleep(0.2)


async def test_submit_status_logs_list_and_delete(client: DashboardClient) -> None:
    with pytest.raises(JobNotFound):
        await client.get_job_info("nope")
    request = JobSubmitRequest(
        entrypoint="echo contract-output", submission_id="j1", metadata={"k": "v"}
    )
    assert await client.submit_job(request) == "j1"
    with pytest.raises(SubmissionIdConflict) as dup:
        await client.submit_job(request)
    assert dup.value.submission_id == "j1"
    info = await client.get_job_info("j1")
    assert info.submission_id == "j1" and info.metadata == {"k": "v"}
    done = await _wait_job(client, "j1", "SUCCEEDED")
    assert done.terminal and done.message == "Job finished successfully."
    assert done.end_time >= done.start_time > 0
    assert "j1" in [j.submission_id for j in await client.list_jobs()]
    assert "contract-output" in (await client.get_job_log("j1") or "")
    assert await client.get_job_log("nope") is None
    await _delete(client, "j1")  # gone for GET /api/jobs/<id>; Ray's list may show it a while
    version = await client.get_version()
    assert version["version"] == "4" and version["ray_version"] == "2.60.0"


async def test_a_failing_entrypoint_and_stopping_a_job(client: DashboardClient) -> None:
    failing = 'python -c "import sys; sys.exit(1)"'
    await client.submit_job(JobSubmitRequest(entrypoint=failing, submission_id="bad"))
    failed = await _wait_job(client, "bad", "FAILED")
    assert failed.error_type == "JOB_ENTRYPOINT_COMMAND_ERROR" and failed.driver_exit_code == 1
    assert failed.message is not None and "exit code 1" in failed.message
    assert await client.stop_job("bad") is False  # already finished: not an error
    await client.submit_job(JobSubmitRequest(entrypoint="sleep 600", submission_id="long"))
    await _wait_job(client, "long", "RUNNING")
    assert await client.stop_job("long") is True
    stopped = await _wait_job(client, "long", "STOPPED")
    assert stopped.terminal
