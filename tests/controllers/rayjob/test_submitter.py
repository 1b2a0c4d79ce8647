"""The K8sJobMode submitter Job, the SidecarMode container and the HTTPMode request."""

from __future__ import annotations

import json
import shlex

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayjob.cluster import build_raycluster
from rayop.controllers.rayjob.submitter import (
    build_sidecar_container,
    build_submit_command,
    build_submitter_job,
    go_quote,
    sidecar_outcome,
    submit_request,
    submitter_job_outcome,
)

from .rayjob_objects import IMAGE, parsed, rayjob, rayjob_wire

OPTIONS = OperatorOptions()


def test_go_quote_escapes_like_strconv_quote() -> None:
    assert go_quote('{"a":"b"}') == '"{\\"a\\":\\"b\\"}"'
    assert go_quote("line\nnext\ttab\\") == '"line\\nnext\\ttab\\\\"'
    assert go_quote("\x01é") == '"\\x01é"'


def test_k8s_job_mode_command_guards_submits_and_follows() -> None:
    job = rayjob(
        runtimeEnvYAML="pip: [requests]\nenv_vars: {A: '1'}\n",
        metadata={"owner": "me"},
        entrypointNumCpus=2,
        entrypointNumGpus=0.5,
        entrypointResources='{"r": 1}',
    )
    words = build_submit_command(job, job_id="id-1", address="http://svc:8265", mode="K8sJobMode")
    script = " ".join(words)
    guard = "if ! ray job status --address http://svc:8265 id-1 >/dev/null 2>&1 ; then"
    assert guard in script
    tokens = shlex.split(script[script.index("ray job submit") :].split(" ; fi")[0])
    assert tokens[:6] == ["ray", "job", "submit", "--address", "http://svc:8265", "--no-wait"]
    options = dict(zip(tokens[6:-3:2], tokens[7:-3:2], strict=True))
    assert json.loads(options["--runtime-env-json"]) == {
        "env_vars": {"A": "1"},
        "pip": ["requests"],
    }
    assert json.loads(options["--metadata-json"]) == {"owner": "me"}
    assert options["--submission-id"] == "id-1"
    assert options["--entrypoint-num-cpus"] == "2.000000"
    assert options["--entrypoint-num-gpus"] == "0.500000"
    assert json.loads(options["--entrypoint-resources"]) == {"r": 1}
    assert tokens[-2:] == ["python", "main.py"]
    assert script.endswith("fi ; ray job logs --address http://svc:8265 --follow id-1")
    assert "api/gcs_healthz" in script.split("; do")[0]


def test_submitter_job_is_named_after_the_rayjob() -> None:
    wire = rayjob_wire(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=7)
    cluster = build_raycluster(
        parsed(wire), "job-abcde", cluster_spec=wire["spec"]["rayClusterSpec"]
    )
    batch = build_submitter_job(
        rayjob(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=7), cluster,
        job_id="id-1", dashboard_url="job-abcde-head-svc.ns.svc.cluster.local:8266",
        options=OPTIONS,
    )  # fmt: skip
    assert batch["metadata"]["name"] == "job"
    assert batch["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "job",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert batch["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert batch["spec"]["backoffLimit"] == 2
    assert batch["spec"]["ttlSecondsAfterFinished"] == 7
    pod = batch["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    container = pod["containers"][0]
    assert container["name"] == "ray-job-submitter" and container["image"] == IMAGE
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    assert "http://job-abcde-head-svc.ns.svc.cluster.local:8266" in container["args"][0]
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {
        "PYTHONUNBUFFERED": "1",
        "RAY_DASHBOARD_ADDRESS": "job-abcde-head-svc.ns.svc.cluster.local:8266",
        "RAY_JOB_SUBMISSION_ID": "id-1",
    }


def test_user_submitter_command_is_kept() -> None:
    template = {"spec": {"containers": [{"name": "mine", "image": "x", "command": ["run"]}]}}
    wire = rayjob_wire(submitterPodTemplate=template, submitterConfig={"backoffLimit": 0})
    job = rayjob(submitterPodTemplate=template, submitterConfig={"backoffLimit": 0})
    cluster = build_raycluster(parsed(wire), "c", cluster_spec=wire["spec"]["rayClusterSpec"])
    batch = build_submitter_job(job, cluster, job_id="i", dashboard_url="d:1", options=OPTIONS)
    container = batch["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["run"] and "args" not in container
    assert batch["spec"]["backoffLimit"] == 0
    assert "ttlSecondsAfterFinished" not in batch["spec"]


def test_sidecar_submits_to_localhost_without_guard() -> None:
    wire = rayjob_wire(submissionMode="SidecarMode")
    job = rayjob(submissionMode="SidecarMode")
    base = build_raycluster(parsed(wire), "c", cluster_spec=wire["spec"]["rayClusterSpec"])
    sidecar = build_sidecar_container(job, base, job_id="id-1", options=OPTIONS)
    script = sidecar["args"][0]
    assert "ray job submit --address http://127.0.0.1:8266 --submission-id id-1" in script
    assert "ray job status" not in script and "--no-wait" not in script
    cluster = build_raycluster(
        parsed(wire), "c", cluster_spec=wire["spec"]["rayClusterSpec"], sidecar=sidecar
    )
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert [c["name"] for c in head["containers"]] == ["ray-head", "ray-job-submitter"]
    assert head["restartPolicy"] == "Never"
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"


def test_http_request_carries_the_persisted_id() -> None:
    job = rayjob(runtimeEnvYAML="working_dir: /x", entrypointResources='{"r": 2}')
    body = submit_request(job, job_id="id-9").to_json()
    assert body == {
        "entrypoint": "python main.py",
        "submission_id": "id-9",
        "runtime_env": {"working_dir": "/x"},
        "entrypoint_resources": {"r": 2},
    }


def test_submitter_outcomes() -> None:
    failed = {"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}  # fmt: skip
    outcome = submitter_job_outcome(failed)
    assert outcome.failed and "BackoffLimitExceeded" in outcome.message
    assert outcome.finished_at is not None
    complete = {"status": {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}  # fmt: skip
    assert not submitter_job_outcome(complete).failed
    assert submitter_job_outcome(complete).finished_at is not None
    assert submitter_job_outcome({}).finished_at is None
    pod = {"status": {"containerStatuses": [{"name": "ray-job-submitter", "state": {"terminated": {"exitCode": 1, "finishedAt": "2024-01-01T00:00:00Z"}}}]}}  # fmt: skip
    assert sidecar_outcome(pod).failed
    running = {"status": {"containerStatuses": [{"name": "ray-job-submitter", "state": {"running": {}}}]}}  # fmt: skip
    assert sidecar_outcome(running).finished_at is None
