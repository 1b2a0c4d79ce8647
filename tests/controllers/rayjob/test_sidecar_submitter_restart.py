"""Gate ``SidecarSubmitterRestart``: the SidecarMode submitter may restart, as in KubeRay v1.7.

With the gate on the sidecar container gets ``restartPolicy: OnFailure``, its script guards the
submit with ``ray job status`` (a restarted container must not submit twice) and then follows
the logs, and a terminated container fails the RayJob only once it has restarted the submitter
backoff limit (2) times. With the gate off nothing of this happens.
"""

from __future__ import annotations

from typing import Any

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayjob.cluster import build_raycluster
from rayop.controllers.rayjob.submitter import build_sidecar_container, sidecar_outcome

from .rayjob_objects import parsed, rayjob, rayjob_wire

ON = OperatorOptions(feature_gates=FeatureGates(sidecar_submitter_restart=True))
OFF = OperatorOptions()


def _sidecar(options: OperatorOptions) -> dict[str, Any]:
    wire = rayjob_wire(submissionMode="SidecarMode")
    base = build_raycluster(parsed(wire), "c", cluster_spec=wire["spec"]["rayClusterSpec"])
    job = rayjob(submissionMode="SidecarMode")
    return build_sidecar_container(job, base, job_id="id-1", options=options)


def test_gate_on_the_sidecar_restarts_on_failure_and_guards_its_submit() -> None:
    sidecar = _sidecar(ON)
    assert sidecar["restartPolicy"] == "OnFailure"
    address = "http://127.0.0.1:8266"
    script = sidecar["args"][0]
    guard = f"if ! ray job status --address {address} id-1 >/dev/null 2>&1 ; then"
    assert guard in script
    assert f"ray job submit --address {address} --no-wait --submission-id id-1 --" in script
    assert script.endswith(f"; fi ; ray job logs --address {address} --follow id-1")


def test_gate_off_the_sidecar_has_no_restart_policy_and_no_guard() -> None:
    sidecar = _sidecar(OFF)
    assert "restartPolicy" not in sidecar
    assert "ray job status" not in sidecar["args"][0]
    assert "--no-wait" not in sidecar["args"][0]


def _pod(*, restarts: int, last: bool, state: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"name": "ray-job-submitter", "restartCount": restarts, "state": state}
    if last:
        status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    return {"status": {"containerStatuses": [{"name": "ray-head"}, status]}}


FAILED = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:00:00Z"}}
RUNNING: dict[str, Any] = {"running": {}}


def test_gate_on_an_exit_fails_the_job_only_after_the_restart_limit() -> None:
    assert not sidecar_outcome(_pod(restarts=0, last=False, state=FAILED), restarts=True).failed
    assert not sidecar_outcome(_pod(restarts=1, last=True, state=RUNNING), restarts=True).failed
    exceeded = sidecar_outcome(_pod(restarts=2, last=True, state=FAILED), restarts=True)
    assert exceeded.failed
    assert exceeded.message == (
        "Ray head pod submitter container ray-job-submitter terminated after exceeding the "
        "maximum restart count"
    )
    done = {"terminated": {"exitCode": 0, "finishedAt": "2026-01-01T00:00:00Z"}}
    finished = sidecar_outcome(_pod(restarts=3, last=True, state=done), restarts=True)
    assert not finished.failed and finished.finished_at is not None


def test_gate_off_the_first_non_zero_exit_fails_the_job_with_its_reason() -> None:
    outcome = sidecar_outcome(_pod(restarts=0, last=False, state=FAILED))
    assert outcome.failed
    assert outcome.message == (
        "Ray head pod container ray-job-submitter terminated with exit code 1: Error"
    )
