"""Each withheld write of a first pass is classified by what it does to the running workload."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from rayop.api.rayjob import JobDeploymentStatus
from rayop.controllers.config.gates import FeatureGates
from rayop.examples import sample_text
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS, RAY_CLUSTERS, RAY_JOBS, SERVICES
from rayop.preview.first_pass import PRIMARY, FirstPasses, PassOutcome
from rayop.preview.recording_client import Write
from rayop.preview.verdicts import (
    DISRUPTIVE,
    JOB_RESUMING_LINE,
    JOB_SUSPENDING_LINE,
    Verdict,
    cluster_size,
    verdicts,
)
from rayop.runtime.reconcile import Request, Result

Obj = dict[str, Any]


def _sample(name: str) -> Obj:
    (doc,) = [d for d in yaml.safe_load_all(sample_text(name)) if d and d["kind"] != "ConfigMap"]
    doc["metadata"]["namespace"] = "ns"
    return dict(doc)


def _write(obj: Obj, verb: str, resource: Resource | None, name: str = "", **kw: Any) -> Write:
    request = Request("ns", obj["metadata"]["name"])
    return Write(
        verb=verb,
        resource=resource,
        namespace="ns" if resource is not None else "",
        name=name,
        subresource=kw.pop("subresource", None),
        body=kw.pop("body", {}),
        controller=PRIMARY[obj["kind"]],
        request=request,
        **kw,
    )


def _verdict(obj: Obj, *writes: Write, error: str = "") -> Verdict:
    key = (PRIMARY[obj["kind"]], Request("ns", obj["metadata"]["name"]))
    outcome = PassOutcome(None, error) if error else PassOutcome(Result())
    passes = FirstPasses(list(writes), [], {key: outcome}, [])
    (verdict,) = verdicts([obj], passes, FeatureGates(), timeout=5)
    return verdict


def test_no_write_is_nothing_and_a_status_write_is_status_only() -> None:
    cluster = _sample("raycluster")
    assert _verdict(cluster).verdict == "nothing"
    status = _write(cluster, "update", RAY_CLUSTERS, "raycluster-sample", subresource="status")
    assert _verdict(cluster, status).verdict == "status only"


def test_a_pod_delete_outranks_a_create_and_a_service_update() -> None:
    cluster = _sample("raycluster")
    writes = [
        _write(cluster, "update", SERVICES, "raycluster-sample-head-svc"),
        _write(cluster, "create", PODS, body={"metadata": {"generateName": "raycluster-sample-"}}),
        _write(cluster, "delete", PODS, "raycluster-sample-head-abcde"),
    ]
    verdict = _verdict(cluster, *writes)
    assert verdict.verdict == "recreate pods" and verdict.disruptive
    assert verdict.effects == [
        "update Service ns/raycluster-sample-head-svc",
        "create Pod ns/raycluster-sample-*",
        "delete Pod ns/raycluster-sample-head-abcde",
    ]


def test_an_update_of_the_object_itself_names_the_fields_it_changes() -> None:
    cluster = _sample("raycluster")
    body = {**cluster, "metadata": {**cluster["metadata"], "finalizers": ["ray.io/x"]}}
    verdict = _verdict(
        cluster, _write(cluster, "update", RAY_CLUSTERS, "raycluster-sample", body=body)
    )
    assert verdict.verdict == "update in place" and not verdict.disruptive
    assert verdict.effects == ["update RayCluster itself: metadata.finalizers"]


def test_a_new_cluster_of_a_rayservice_is_a_zero_downtime_upgrade_with_its_size() -> None:
    service = _sample("rayservice")
    spec = service["spec"]["rayClusterConfig"]
    body = {"metadata": {"name": "rayservice-sample-x2b4c"}, "spec": spec}
    verdict = _verdict(
        service, _write(service, "create", RAY_CLUSTERS, "rayservice-sample-x2b4c", body=body)
    )
    assert verdict.verdict == "new RayCluster" and verdict.disruptive
    assert verdict.effects == [
        "create RayCluster ns/rayservice-sample-x2b4c (a zero-downtime upgrade): "
        f"{cluster_size(spec)}"
    ]
    assert cluster_size(spec) == "2 pods (head + 1 workers), cpu 2, memory 3Gi"


def test_a_job_submitted_to_the_dashboard_is_a_job_and_a_serve_config_is_in_place() -> None:
    job = _sample("rayjob")
    proxy = "/api/v1/namespaces/ns/services/rayjob-sample-head-svc:dashboard/proxy"
    submit = _write(job, "POST", None, path=f"{proxy}/api/jobs/")
    assert _verdict(job, submit).verdict == "job"
    service = _sample("rayservice")
    serve = _write(service, "PUT", None, path=f"{proxy}/api/serve/applications/")
    verdict = _verdict(service, serve)
    assert verdict.verdict == "update in place"
    assert verdict.effects == ["dashboard PUT /api/serve/applications/"]


def test_a_running_rayjob_moved_to_suspending_is_a_job_verdict_once() -> None:
    job = _sample("rayjob")
    job["spec"]["suspend"] = True
    job["status"] = {"jobDeploymentStatus": "Running"}
    body = {**job, "status": {"jobDeploymentStatus": "Suspending"}}
    status = _write(job, "update", RAY_JOBS, "rayjob-sample", subresource="status", body=body)
    verdict = _verdict(job, status)
    assert verdict.verdict == "job" and verdict.disruptive
    assert verdict.effects == [JOB_SUSPENDING_LINE]
    job["status"] = {"jobDeploymentStatus": "Suspending"}  # already suspending: its status only
    assert _verdict(job, status).verdict == "status only"


def test_a_suspended_rayjob_that_resumes_is_a_new_cluster_or_with_a_selector_a_job() -> None:
    job = _sample("rayjob")
    job["status"] = {"jobDeploymentStatus": "Suspended"}
    body = {**job, "status": {"jobDeploymentStatus": JobDeploymentStatus.NEW}}
    status = _write(job, "update", RAY_JOBS, "rayjob-sample", subresource="status", body=body)
    verdict = _verdict(job, status)
    assert verdict.verdict == "new RayCluster"
    spec = job["spec"]["rayClusterSpec"]
    assert verdict.effects == [f"{JOB_RESUMING_LINE}: {cluster_size(spec)}"]
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    assert _verdict(job, status).verdict == "job"


def test_a_failed_pass_is_no_answer_and_counts_as_disruptive() -> None:
    verdict = _verdict(_sample("raycluster"), error="ApiError: boom")
    assert verdict.verdict == "no answer" and verdict.effects == ["the pass failed: ApiError: boom"]
    assert "no answer" in DISRUPTIVE


def test_an_invalid_object_is_refused_whatever_its_pass_wrote() -> None:
    cluster = _sample("raycluster")
    cluster["spec"]["workerGroupSpecs"][0].update(minReplicas=3, maxReplicas=2)
    verdict = _verdict(cluster, _write(cluster, "delete", PODS, "p"))
    assert verdict.verdict == "refused"
    assert verdict.effects[0].startswith('RayCluster.ray.io "raycluster-sample" is invalid:')


@pytest.mark.parametrize("kind", ["RayCluster", "RayService"])
def test_writes_of_another_objects_pass_are_not_counted(kind: str) -> None:
    obj = _sample("raycluster" if kind == "RayCluster" else "rayservice")
    other = Write(
        "delete",
        PODS,
        "ns",
        "p",
        None,
        {},
        controller=PRIMARY[kind],
        request=Request("ns", "other"),
    )
    assert _verdict(obj, other).verdict == "nothing"
