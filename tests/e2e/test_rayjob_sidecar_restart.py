"""SidecarMode RayJobs with the ``SidecarSubmitterRestart`` gate on, on the embedded plane.

The simulated kubelet does not run the ``ray-job-submitter`` container, so the test plays its
restarts in the head pod's status: a restart (``CrashLoopBackOff``, ``restartCount`` 1) leaves
the RayJob Running, and the restarted container then submits and the job completes; a
container that has restarted twice and terminated again fails the RayJob with KubeRay's message.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from rayop.api.common import format_time
from rayop.controllers.common.gates import FeatureGates
from rayop.controllers.common.options import OperatorOptions
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.testing import eventually

from .rayjob_env import RayJobEnv, play_sidecar, running_rayjob_operator, small_rayjob

OPTIONS = OperatorOptions(feature_gates=FeatureGates(sidecar_submitter_restart=True))


async def _head_pod(env: RayJobEnv, namespace: str, name: str) -> dict[str, Any]:
    await env.wait_for_status(namespace, name, "Running")
    cluster = env.status(namespace, name)["rayClusterName"]
    selector = f"ray.io/cluster={cluster},ray.io/node-type=head"

    async def listed() -> bool:
        pods = await env.client.list(PODS, namespace=namespace, label_selector=selector)
        return bool(pods["items"]) and bool(pods["items"][0].get("status", {}).get("podIP"))

    await eventually(listed, what="head pod running")
    pods = await env.client.list(PODS, namespace=namespace, label_selector=selector)
    return dict(pods["items"][0])


async def _set_submitter(
    env: RayJobEnv, pod: dict[str, Any], *, restarts: int, state: dict[str, Any]
) -> None:
    now = format_time(datetime.now(UTC))
    last = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}}
    for status in pod["status"]["containerStatuses"]:
        if status["name"] == "ray-job-submitter":
            status.update(restartCount=restarts, lastState=last, state=state)
    await env.client.update_status(PODS, pod)


async def test_the_sidecar_restarts_on_failure_and_a_restart_does_not_fail_the_job() -> None:
    async with running_rayjob_operator(options=OPTIONS) as env:
        ns = "sidecar-restart"
        await env.apply(small_rayjob("job", submissionMode="SidecarMode"), ns)
        pod = await _head_pod(env, ns, "job")
        (sidecar,) = [c for c in pod["spec"]["containers"] if c["name"] == "ray-job-submitter"]
        assert sidecar["restartPolicy"] == "OnFailure"
        assert "ray job status" in sidecar["args"][0] and "--no-wait" in sidecar["args"][0]
        cluster = env.status(ns, "job")["rayClusterName"]
        head = (env.stored(RAY_CLUSTERS, ns, cluster) or {})["spec"]["headGroupSpec"]
        assert head["template"]["spec"]["restartPolicy"] == "Never"
        backoff = {"waiting": {"reason": "CrashLoopBackOff"}}
        await _set_submitter(env, pod, restarts=1, state=backoff)
        await asyncio.sleep(4)  # a RayJob pass (3 s requeue) sees the restart
        assert env.status(ns, "job")["jobDeploymentStatus"] == "Running"
        pod = await _head_pod(env, ns, "job")
        now = format_time(datetime.now(UTC))
        await _set_submitter(env, pod, restarts=1, state={"running": {"startedAt": now}})
        await play_sidecar(env, ns, "job")
        status = await env.wait_for_status(ns, "job", "Complete", "Failed")
        assert status["jobDeploymentStatus"] == "Complete", status


async def test_a_sidecar_past_its_restart_limit_fails_the_job_with_kuberays_message() -> None:
    async with running_rayjob_operator(options=OPTIONS) as env:
        ns = "sidecar-exceeded"
        await env.apply(small_rayjob("job", submissionMode="SidecarMode"), ns)
        pod = await _head_pod(env, ns, "job")
        now = format_time(datetime.now(UTC))
        terminated = {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}
        await _set_submitter(env, pod, restarts=2, state={"terminated": terminated})
        status = await env.wait_for_status(ns, "job", "Failed")
        assert status["reason"] == "SubmissionFailed"
        assert status["message"] == (
            "Ray head pod submitter container ray-job-submitter terminated after exceeding the "
            "maximum restart count"
        )
