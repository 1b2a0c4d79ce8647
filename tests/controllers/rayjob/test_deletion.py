"""What a finished RayJob deletes and when: rules, legacy policies, shutdownAfterJobFinishes."""

from __future__ import annotations

from datetime import UTC, datetime

from rayop.api.rayjob import DeletionPolicyType, RayJobStatus
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayjob.deletion import decide

from .rayjob_objects import rayjob

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
