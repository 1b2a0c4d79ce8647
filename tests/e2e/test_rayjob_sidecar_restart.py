"""SidecarMode RayJobs with the ``SidecarSubmitterRestart`` gate on, on the embedded plane.

The simulated kubelet does not run the ``ray-job-submitter`` container, so the test plays its
restarts in the head pod's status: a restart (``CrashLoopBackOff``, ``restartCount`` 1) leaves
the RayJob Running, and the restarted container then submits and the job completes; a
container that has restarted twice and terminated again fails the RayJob with KubeRay's message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rayop.api.common import format_time
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.runtime.reconcile import Request
from rayop.testing import eventually

from .rayjob_env import RayJobEnv, play_sidecar, running_rayjob_operator, small_rayjob
from .reconcile_passes import PassLog

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


def _submitter(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ray-job-submitter`` container's status in ``pod``."""
    (status,) = [
        s for s in pod["status"]["containerStatuses"] if s["name"] == "ray-job-submitter"
    ]
    return dict(status)


async def _set_submitter(
    env: RayJobEnv, pod: dict[str, Any], *, restarts: int, state: dict[str, Any]
) -> None:
    now = format_time(datetime.now(UTC))
    last = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}}
    for status in pod["status"]["containerStatuses"]:
        if status["name"] == "ray-job-submitter":
            status.update(restartCount=restarts, lastState=last, state=state)
    await env.client.update_status(PODS, pod)


async def _a_pass_sees(env: RayJobEnv, passes: PassLog, pod: dict[str, Any], ns: str) -> None:
    """Blocks until the operator's pod cache holds ``pod``'s submitter status, then until a
    RayJob pass that started after that has returned."""
    name, wanted = pod["metadata"]["name"], _submitter(pod)

    def cached() -> bool:
        seen = env.manager.informers.informer(PODS).get(ns, name)
        return seen is not None and _submitter(seen) == wanted

    await eventually(cached, what="the operator's cache has the submitter's restart")
    since = asyncio.get_running_loop().time()
    job = Request(ns, "job")
    await eventually(lambda: passes.completed_since(job, since), what="a RayJob pass after it")


async def test_the_sidecar_restarts_on_failure_and_a_restart_does_not_fail_the_job() -> None:
    passes = PassLog()
    async with running_rayjob_operator(options=OPTIONS, wrap_reconcile=passes.wrap) as env:
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
        await _a_pass_sees(env, passes, pod, ns)  # the 3 s requeue's pass, at the latest
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
