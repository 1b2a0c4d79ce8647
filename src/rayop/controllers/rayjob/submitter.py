"""How a RayJob's Ray job gets submitted: the K8sJobMode submitter Job, the SidecarMode container
and the HTTPMode request (KubeRay v1.7.0: ``ray-operator/controllers/ray/common/job.go`` and
``getSubmitterTemplate`` in ``ray-operator/controllers/ray/rayjob_controller.go``; Ray's Jobs REST
API, https://docs.ray.io/en/latest/cluster/running-applications/job-submission/rest.html).

Pure builders over wire dicts, plus readers of a finished submitter (the batch Job's conditions,
the sidecar container's state).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml

from rayop.api import keys
from rayop.api.common import parse_time
from rayop.api.rayjob import JobSubmissionMode, RayJob
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.models import JobSubmitRequest
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels
from rayop.controllers.kit.ownership import controller_reference
from rayop.controllers.raycluster.builders import add_auth_env
from rayop.controllers.rayjob.cluster import ORIGIN_CRD, dashboard_port

SUBMITTER_CONTAINER_NAME = "ray-job-submitter"
DEFAULT_SUBMITTER_BACKOFF_LIMIT = 2
SUBMITTER_LIMITS = {"cpu": "1", "memory": "1Gi"}
SUBMITTER_REQUESTS = {"cpu": "500m", "memory": "200Mi"}
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GO_ESCAPES |= {"\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """Returns ``text`` double-quoted with Go's ``strconv.Quote`` escapes."""
    out = ['"']
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def runtime_env(job: RayJob) -> dict[str, Any] | None:
    """Returns ``spec.runtimeEnvYAML`` decoded (None when unset).

    Raises:
        ValueError: the YAML is not a mapping.
    """
    text = job.spec.runtime_env_yaml
    if not text:
        return None
    decoded = yaml.safe_load(text)
    if decoded is None:
        return None
    if not isinstance(decoded, dict):
        raise ValueError("spec.runtimeEnvYAML: not a mapping")
    return decoded


def _compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _gcs_wait_loop(address: str) -> list[str]:
    probe = (
        'python -c "import sys, urllib.request; '
        f"body = urllib.request.urlopen('{address}/api/gcs_healthz', timeout=10).read(); "
        "sys.exit(0 if b'success' in body else 1)\""
    )
    message = go_quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    return ["until", probe, ">/dev/null", "2>&1", ";", "do", "echo", message, ";"]


def submitter_address(*, mode: str, dashboard_url: str, cluster: Obj) -> str:
    """Returns the dashboard address the submitter uses: ``http://127.0.0.1:<port>`` in
    SidecarMode (same network namespace as the head), else ``http://<dashboardURL>``."""
    if mode == JobSubmissionMode.SIDECAR_MODE:
        return f"http://127.0.0.1:{dashboard_port(cluster)}"
    return dashboard_url if dashboard_url.startswith("http://") else f"http://{dashboard_url}"


def build_submit_command(
    job: RayJob, *, job_id: str, address: str, mode: str, sidecar_restarts: bool = False
) -> list[str]:
    """Returns the words of the submitter's bash script (joined with spaces by the caller).

    K8sJobMode guards the submit with ``ray job status`` (the Job may retry), submits with
    ``--no-wait`` and then follows the logs; SidecarMode submits and streams in one command,
    unless ``sidecar_restarts`` (gate ``SidecarSubmitterRestart``: the container may restart)
    asks for the same guard as K8sJobMode's.

    Raises:
        ValueError: ``runtimeEnvYAML`` is not a mapping.
    """
    sidecar = mode == JobSubmissionMode.SIDECAR_MODE
    guarded = mode == JobSubmissionMode.K8S_JOB_MODE or (sidecar and sidecar_restarts)
    words = [*_gcs_wait_loop(address), "sleep", "2", ";", "done", ";"]
    if guarded:
        words += ["if", "!", "ray", "job", "status", "--address", address, job_id]
        words += [">/dev/null", "2>&1", ";", "then"]
    words += ["ray", "job", "submit", "--address", address]
    if guarded:
        words.append("--no-wait")
    env = runtime_env(job)
    if env:
        words += ["--runtime-env-json", go_quote(_compact_json(env))]
    if job.spec.metadata:
        words += ["--metadata-json", go_quote(_compact_json(job.spec.metadata))]
    if job_id:
        words += ["--submission-id", job_id]
    if job.spec.entrypoint_num_cpus:
        words += ["--entrypoint-num-cpus", f"{job.spec.entrypoint_num_cpus:f}"]
    if job.spec.entrypoint_num_gpus:
        words += ["--entrypoint-num-gpus", f"{job.spec.entrypoint_num_gpus:f}"]
    if job.spec.entrypoint_resources:
        words += ["--entrypoint-resources", go_quote(job.spec.entrypoint_resources)]
    words += ["--", (job.spec.entrypoint or "").strip(), ";"]
    if guarded:
        words += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job_id]
    return words


def default_submitter_container(cluster_spec: Obj) -> dict[str, Any]:
    """Returns KubeRay's default submitter container: the head image, 1 CPU / 1Gi limits."""
    head = cs.ray_container(cs.head_group({"spec": cluster_spec}))
    return {
        "name": SUBMITTER_CONTAINER_NAME,
        "image": head.get("image", ""),
        "resources": {"limits": dict(SUBMITTER_LIMITS), "requests": dict(SUBMITTER_REQUESTS)},
    }


def _configure(
    container: dict[str, Any],
    job: RayJob,
    *,
    job_id: str,
    dashboard_url: str,
    mode: str,
    cluster: Obj | None,
    options: OperatorOptions,
) -> None:
    if not container.get("command") or mode == JobSubmissionMode.SIDECAR_MODE:
        address = submitter_address(mode=mode, dashboard_url=dashboard_url, cluster=cluster or {})
        restarts = options.feature_gates.sidecar_submitter_restart
        words = build_submit_command(
            job, job_id=job_id, address=address, mode=mode, sidecar_restarts=restarts
        )
        container["command"] = ["/bin/bash", "-lce" if options.enable_login_shell else "-ce", "--"]
        container["args"] = [" ".join(words)]
    env = container.setdefault("env", [])
    env.append({"name": "PYTHONUNBUFFERED", "value": "1"})
    env.append({"name": "RAY_DASHBOARD_ADDRESS", "value": dashboard_url})
    env.append({"name": "RAY_JOB_SUBMISSION_ID", "value": job_id})
    if cluster is not None and cs.is_auth_enabled(cluster):
        add_auth_env(cluster, container)


def build_sidecar_container(
    job: RayJob, cluster: Obj, *, job_id: str, options: OperatorOptions
) -> dict[str, Any]:
    """Returns the SidecarMode submitter container appended to the head pod.

    With the ``SidecarSubmitterRestart`` gate on it gets ``restartPolicy: OnFailure`` (a
    per-container restart rule, Kubernetes 1.35+): a non-zero exit, such as ``ray job logs
    --follow`` losing its connection, restarts only this container, which then finds the job
    submitted and follows its logs again.
    """
    container = default_submitter_container(cs.spec(cluster))
    if options.feature_gates.sidecar_submitter_restart:
        container["restartPolicy"] = "OnFailure"
    _configure(
        container,
        job,
        job_id=job_id,
        dashboard_url="",
        mode=JobSubmissionMode.SIDECAR_MODE,
        cluster=cluster,
        options=options,
    )
    return container


def build_submitter_job(
    job: RayJob,
    cluster: Obj,
    *,
    job_id: str,
    dashboard_url: str,
    options: OperatorOptions,
) -> dict[str, Any]:
    """Returns the K8sJobMode batch Job, named exactly as the RayJob and owned by it.

    The pod is ``spec.submitterPodTemplate`` (or a default one with ``restartPolicy: Never``);
    its first container gets KubeRay's ``/bin/bash -ce --`` script unless it sets a command,
    and always ``PYTHONUNBUFFERED``, ``RAY_DASHBOARD_ADDRESS`` and ``RAY_JOB_SUBMISSION_ID``.
    """
    template = copy.deepcopy(job.spec.submitter_pod_template or {})
    if not template:
        template = {
            "spec": {
                "containers": [default_submitter_container(cs.spec(cluster))],
                "restartPolicy": "Never",
            }
        }
    containers = template.setdefault("spec", {}).setdefault("containers", [])
    if not containers:
        containers.append(default_submitter_container(cs.spec(cluster)))
    _configure(
        containers[0],
        job,
        job_id=job_id,
        dashboard_url=dashboard_url,
        mode=JobSubmissionMode.K8S_JOB_MODE,
        cluster=cluster,
        options=options,
    )
    backoff = DEFAULT_SUBMITTER_BACKOFF_LIMIT
    if (
        job.spec.submitter_config is not None
        and job.spec.submitter_config.backoff_limit is not None
    ):
        backoff = job.spec.submitter_config.backoff_limit
    job_spec: dict[str, Any] = {"backoffLimit": backoff, "template": template}
    if job.spec.shutdown_after_job_finishes:
        job_spec["ttlSecondsAfterFinished"] = job.spec.ttl_seconds_after_finished
    name = job.name
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": {
                keys.RAY_ORIGINATED_FROM_CR_NAME: name,
                keys.RAY_ORIGINATED_FROM_CRD: ORIGIN_CRD,
                keys.APP_CREATED_BY: labels.CREATED_BY_VALUE,
            },
            "ownerReferences": [controller_reference(job)],
        },
        "spec": job_spec,
    }


def submit_request(job: RayJob, *, job_id: str) -> JobSubmitRequest:
    """Returns the HTTPMode ``POST /api/jobs/`` body (KubeRay's ``ConvertRayJobToReq``).

    Raises:
        ValueError: ``runtimeEnvYAML`` or ``entrypointResources`` cannot be decoded.
    """
    resources = None
    if job.spec.entrypoint_resources:
        resources = json.loads(job.spec.entrypoint_resources)
        if not isinstance(resources, dict):
            raise ValueError("spec.entrypointResources: not a JSON object")
    return JobSubmitRequest(
        entrypoint=job.spec.entrypoint or "",
        submission_id=job_id,
        runtime_env=runtime_env(job),
        metadata=dict(job.spec.metadata) if job.spec.metadata else None,
        entrypoint_num_cpus=job.spec.entrypoint_num_cpus or 0.0,
        entrypoint_num_gpus=job.spec.entrypoint_num_gpus or 0.0,
        entrypoint_resources=resources,
    )


@dataclass(frozen=True, kw_only=True)
class SubmitterOutcome:
    """What a submitter (batch Job or sidecar container) tells about itself."""

    failed: bool = False
    """It ended in failure (Job condition Failed, or the sidecar exited non-zero)."""
    message: str = ""
    """The failure's description (for ``status.message``)."""
    finished_at: datetime | None = None
    """When it finished (either way); None while it runs."""


def _finished(at: datetime | None, failure: str) -> SubmitterOutcome:
    """A submitter that finished: failed with ``failure`` as the message, succeeded when it is
    empty."""
    return SubmitterOutcome(failed=bool(failure), message=failure, finished_at=at)


def submitter_job_outcome(batch_job: Obj) -> SubmitterOutcome:
    """Reads a submitter Job's ``Failed`` / ``Complete`` conditions."""
    for cond in (batch_job.get("status") or {}).get("conditions") or []:
        if cond.get("status") != "True" or cond.get("type") not in ("Failed", "Complete"):
            continue
        at = cond.get("lastTransitionTime")
        finished = parse_time(at) if at else None
        failure = ""
        if cond.get("type") == "Failed":
            failure = (
                f"Job submission has failed. Reason: {cond.get('reason', '')}. "
                f"Message: {cond.get('message', '')}"
            )
        return _finished(finished, failure)
    return SubmitterOutcome()


def sidecar_outcome(
    head_pod: Obj, *, restarts: bool = False, backoff_limit: int = DEFAULT_SUBMITTER_BACKOFF_LIMIT
) -> SubmitterOutcome:
    """Reads the ``ray-job-submitter`` container's state in the head pod.

    Without ``restarts`` a non-zero exit fails the job. With ``restarts`` (gate
    ``SidecarSubmitterRestart``) an exit is transient: the job fails only once the container,
    having terminated before, has restarted ``backoff_limit`` times and is not now done with
    exit code 0.
    """
    for status in (head_pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") != SUBMITTER_CONTAINER_NAME:
            continue
        terminated = (status.get("state") or {}).get("terminated")
        at = (terminated or {}).get("finishedAt")
        finished = parse_time(at) if at else None
        if restarts:
            return _restart_outcome(status, backoff_limit, finished)
        if not terminated:
            return SubmitterOutcome()
        code = int(terminated.get("exitCode") or 0)
        failure = ""
        if code != 0:
            failure = (
                f"Ray head pod container {SUBMITTER_CONTAINER_NAME} terminated with exit code "
                f"{code}: {terminated.get('reason', '')}"
            )
        return _finished(finished, failure)
    return SubmitterOutcome()


def _restart_outcome(
    status: Obj, backoff_limit: int, finished: datetime | None
) -> SubmitterOutcome:
    """KubeRay's restart-count check of a submitter container that may restart."""
    if not (status.get("lastState") or {}).get("terminated"):
        return SubmitterOutcome(finished_at=finished)
    terminated = (status.get("state") or {}).get("terminated")
    if terminated and int(terminated.get("exitCode") or 0) == 0:
        return SubmitterOutcome(finished_at=finished)
    if int(status.get("restartCount") or 0) >= backoff_limit:
        message = (
            f"Ray head pod submitter container {SUBMITTER_CONTAINER_NAME} terminated after "
            "exceeding the maximum restart count"
        )
        return SubmitterOutcome(failed=True, message=message, finished_at=finished)
    return SubmitterOutcome(finished_at=finished)
