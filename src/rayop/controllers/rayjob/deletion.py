"""What a finished RayJob deletes, and when.

KubeRay v1.7.0: ``handleDeletionRules``, ``handleLegacyDeletionPolicy`` and
``handleShutdownAfterJobFinishes`` in ``ray-operator/controllers/ray/rayjob_controller.go``.

In order of precedence:

1. ``clusterSelector``: nothing; the cluster belongs to someone else.
2. ``deletionStrategy.deletionRules`` (gate RayJobDeletionPolicy, beta, always on here): each
   rule whose condition matches fires ``ttlSeconds`` after ``status.endTime``; of the overdue
   rules not yet carried out, only the most impactful runs per pass
   (DeleteSelf > DeleteCluster > DeleteWorkers > DeleteNone); the pass requeues 2 s after the
   next deadline.
3. legacy ``deletionStrategy.onSuccess`` / ``onFailure``, after ``ttlSecondsAfterFinished``.
4. ``shutdownAfterJobFinishes``: after ``ttlSecondsAfterFinished`` delete the cluster (the
   submitter Job stays for its logs), or the RayJob itself when
   ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true``.

:func:`decide` is pure; the caller carries the action out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from rayop.api.common import parse_time
from rayop.api.rayjob import DeletionPolicyType, DeletionRule, JobStatus, RayJob, RayJobStatus
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import settings

IMPACT = (
    DeletionPolicyType.DELETE_SELF,
    DeletionPolicyType.DELETE_CLUSTER,
    DeletionPolicyType.DELETE_WORKERS,
    DeletionPolicyType.DELETE_NONE,
)
"""Policies from the most to the least impactful."""


@dataclass(frozen=True, kw_only=True)
class DeletionDecision:
    """What to do in this pass.

    Attributes:
        action: The policy to carry out now (None: nothing yet, or nothing ever).
        requeue_after: Seconds until the next pass should look again (None: no requeue).
    """

    action: DeletionPolicyType | None = None
    requeue_after: float | None = None


def _end(status: RayJobStatus, now: datetime) -> datetime:
    return parse_time(status.end_time) if status.end_time else now


def _until(deadline: datetime, now: datetime) -> float:
    return (deadline - now).total_seconds() + settings.RAYJOB_DELETION_MARGIN


def rule_matches(rule: DeletionRule, status: RayJobStatus) -> bool:
    """Tells whether a rule's condition holds for the finished job."""
    condition = rule.condition
    if condition.job_status is not None:
        return bool(condition.job_status == status.job_status)
    if condition.job_deployment_status is not None:
        return bool(condition.job_deployment_status == status.job_deployment_status)
    return False


def most_impactful(policies: list[DeletionPolicyType]) -> DeletionPolicyType:
    """Returns the most impactful of several policies."""
    return min(policies, key=lambda p: IMPACT.index(DeletionPolicyType(p)))


def _decide_rules(
    rules: list[DeletionRule],
    status: RayJobStatus,
    now: datetime,
    is_done: Callable[[DeletionPolicyType], bool],
) -> DeletionDecision:
    overdue: list[DeletionPolicyType] = []
    next_deadline: datetime | None = None
    for rule in rules:
        if not rule_matches(rule, status):
            continue
        deadline = _end(status, now) + timedelta(seconds=rule.condition.ttl_seconds)
        if now < deadline:
            next_deadline = deadline if next_deadline is None else min(next_deadline, deadline)
            continue
        if not is_done(DeletionPolicyType(rule.policy)):
            overdue.append(DeletionPolicyType(rule.policy))
    action = most_impactful(overdue) if overdue else None
    requeue = None if next_deadline is None else _until(next_deadline, now)
    return DeletionDecision(action=action, requeue_after=requeue)


def _decide_after_ttl(
    policy: DeletionPolicyType, job: RayJob, status: RayJobStatus, now: datetime
) -> DeletionDecision:
    deadline = _end(status, now) + timedelta(seconds=job.spec.ttl_seconds_after_finished)
    if now < deadline:
        return DeletionDecision(requeue_after=_until(deadline, now))
    return DeletionDecision(action=policy)


def decide(
    job: RayJob,
    status: RayJobStatus,
    now: datetime,
    *,
    options: OperatorOptions,
    is_done: Callable[[DeletionPolicyType], bool],
) -> DeletionDecision:
    """Returns what a finished RayJob should delete now and when to look again.

    Args:
        job: The RayJob (its spec).
        status: Its status (Complete or Failed, with ``endTime``).
        now: The wall-clock time.
        options: ``delete_rayjob_cr_after_job_finishes`` is read.
        is_done: Tells whether a policy's effect is already in place (rules only).
    """
    if job.spec.cluster_selector:
        return DeletionDecision()
    strategy = job.spec.deletion_strategy
    if strategy is not None and strategy.deletion_rules:
        return _decide_rules(strategy.deletion_rules, status, now, is_done)
    if strategy is not None and (strategy.on_success or strategy.on_failure):
        succeeded = status.job_status == JobStatus.SUCCEEDED
        chosen = strategy.on_success if succeeded else strategy.on_failure
        if chosen is None or chosen.policy is None:
            return DeletionDecision()
        return _decide_after_ttl(DeletionPolicyType(chosen.policy), job, status, now)
    if job.spec.shutdown_after_job_finishes:
        policy = (
            DeletionPolicyType.DELETE_SELF
            if options.delete_rayjob_cr_after_job_finishes
            else DeletionPolicyType.DELETE_CLUSTER
        )
        return _decide_after_ttl(policy, job, status, now)
    return DeletionDecision()
