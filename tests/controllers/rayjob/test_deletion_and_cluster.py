"""What a finished RayJob deletes and when; the RayCluster and head Service built for it."""

from __future__ import annotations

from datetime import UTC, datetime

from rayjob_objects import parsed, rayjob, rayjob_wire

from rayop.api.rayjob import DeletionPolicyType, RayJobStatus
from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.rayjob.cluster import (
    build_raycluster,
    build_rayjob_head_service,
    dashboard_url,
    head_service_needs_update,
    updated_head_service,
)
from rayop.controllers.rayjob.deletion import decide

END = "2024-05-01T12:00:00Z"
OPTIONS = OperatorOptions()


def at(seconds: int) -> datetime:
    return datetime(2024, 5, 1, 12, 0, seconds, tzinfo=UTC)


def succeeded() -> RayJobStatus:
    return RayJobStatus(job_deployment_status="Complete", job_status="SUCCEEDED", end_time=END)


def never_done(_: DeletionPolicyType) -> bool:
    return False


def test_shutdown_after_ttl() -> None:
    job = rayjob(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10)
    early = decide(job, succeeded(), at(4), options=OPTIONS, is_done=never_done)
    assert early.action is None and early.requeue_after == 8.0
    due = decide(job, succeeded(), at(10), options=OPTIONS, is_done=never_done)
    assert due.action == "DeleteCluster" and due.requeue_after is None
    cr = decide(job, succeeded(), at(10), options=OperatorOptions(delete_rayjob_cr_after_job_finishes=True), is_done=never_done)  # fmt: skip
    assert cr.action == "DeleteSelf"
    assert decide(rayjob(), succeeded(), at(59), options=OPTIONS, is_done=never_done).action is None


def test_rules_pick_the_most_impactful_overdue_one() -> None:
    rules = [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 5}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 20}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED", "ttlSeconds": 0}},
    ]
    job = rayjob(deletionStrategy={"deletionRules": rules})
    first = decide(job, succeeded(), at(1), options=OPTIONS, is_done=never_done)
    assert first.action == "DeleteWorkers" and first.requeue_after == 6.0
    both = decide(job, succeeded(), at(6), options=OPTIONS, is_done=never_done)
    assert both.action == "DeleteCluster" and both.requeue_after == 16.0

    def cluster_gone(policy: DeletionPolicyType) -> bool:
        return policy in ("DeleteCluster", "DeleteWorkers")

    later = decide(job, succeeded(), at(7), options=OPTIONS, is_done=cluster_gone)
    assert later.action is None and later.requeue_after == 15.0
    failed = RayJobStatus(job_deployment_status="Failed", job_status="FAILED", end_time=END)
    assert decide(job, failed, at(0), options=OPTIONS, is_done=never_done).action == "DeleteSelf"


def test_legacy_policy_and_cluster_selector() -> None:
    strategy = {"onSuccess": {"policy": "DeleteNone"}, "onFailure": {"policy": "DeleteCluster"}}
    job = rayjob(deletionStrategy=strategy, ttlSecondsAfterFinished=1)
    failed = RayJobStatus(job_deployment_status="Failed", job_status="FAILED", end_time=END)
    assert decide(job, failed, at(2), options=OPTIONS, is_done=never_done).action == "DeleteCluster"
    assert (
        decide(job, succeeded(), at(2), options=OPTIONS, is_done=never_done).action == "DeleteNone"
    )
    selected = rayjob(clusterSelector={"ray.io/cluster": "x"}, shutdownAfterJobFinishes=True)
    nothing = decide(selected, succeeded(), at(59), options=OPTIONS, is_done=never_done)
    assert nothing.action is None and nothing.requeue_after is None


def test_raycluster_for_a_rayjob() -> None:
    wire = rayjob_wire(submissionMode="HTTPMode")
    wire["metadata"]["annotations"] = {"note": "x"}
    cluster = build_raycluster(
        parsed(wire), "job-abcde", cluster_spec=wire["spec"]["rayClusterSpec"]
    )
    meta = cluster["metadata"]
    assert meta["name"] == "job-abcde" and meta["namespace"] == "ns"
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "job",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": "HTTPMode",
    }
    assert meta["annotations"] == {"note": "x"}
    assert meta["ownerReferences"][0]["kind"] == "RayJob"
    assert cluster["spec"] == wire["spec"]["rayClusterSpec"]
    assert (
        dashboard_url(cluster, None, options=OPTIONS)
        == "job-abcde-head-svc.ns.svc.cluster.local:8266"
    )


def test_rayjob_head_service_follows_the_cluster() -> None:
    wire = rayjob_wire()
    first = build_raycluster(parsed(wire), "job-aaaaa", cluster_spec=wire["spec"]["rayClusterSpec"])
    svc = build_rayjob_head_service(parsed(wire), first, options=OPTIONS)
    assert svc["metadata"]["name"] == "job-head-svc"
    assert svc["spec"]["selector"]["ray.io/cluster"] == "job-aaaaa"
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    current = {**svc, "spec": {**svc["spec"], "clusterIP": "10.0.0.7"}}
    second = build_raycluster(
        parsed(wire), "job-bbbbb", cluster_spec=wire["spec"]["rayClusterSpec"]
    )
    desired = build_rayjob_head_service(parsed(wire), second, options=OPTIONS)
    assert not head_service_needs_update(current, svc)
    assert head_service_needs_update(current, desired)
    updated = updated_head_service(current, desired)
    assert updated["spec"]["clusterIP"] == "10.0.0.7"
    assert updated["spec"]["selector"]["ray.io/cluster"] == "job-bbbbb"
