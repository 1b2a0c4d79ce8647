"""KubeRay v1.7's checks of a RayJob's TTL and ``deletionStrategy`` (``validateDeletionConfiguration``).

The legacy ``onSuccess``/``onFailure`` policies and ``deletionRules`` are checked as KubeRay
does: the first failure of the configuration as a whole is the answer; the rules are checked
one by one and every failing rule is reported, joined with newlines as Go's ``errors.Join``.
"""

from __future__ import annotations

from typing import Final

from rayop.api.rayjob import DeletionPolicyType, DeletionRule, RayJobSpec
from rayop.api.validation.cluster_spec import is_autoscaling_enabled
from rayop.api.validation.gates import Gates, gate_on

__all__ = ["deletion_problem"]

_INVALID: Final = "The RayJob spec is invalid: "
_ORDER: Final = (
    DeletionPolicyType.DELETE_WORKERS,
    DeletionPolicyType.DELETE_CLUSTER,
    DeletionPolicyType.DELETE_SELF,
)
_CLUSTER_POLICIES: Final = (DeletionPolicyType.DELETE_CLUSTER, DeletionPolicyType.DELETE_WORKERS)


def deletion_problem(spec: RayJobSpec, gates: Gates | None) -> str | None:
    """Returns KubeRay's message for the TTL and deletion strategy, "" when the checks stop at
    the ``RayJobDeletionPolicy`` gate being off (the gate check reports it), None when valid."""
    shutdown = spec.shutdown_after_job_finishes is True
    if not shutdown and spec.ttl_seconds_after_finished > 0:
        return (
            f"{_INVALID}a RayJob with shutdownAfterJobFinishes set to false cannot have "
            "TTLSecondsAfterFinished"
        )
    strategy = spec.deletion_strategy
    if strategy is None:
        return None
    if not gate_on(gates, "RayJobDeletionPolicy"):
        return ""
    legacy = strategy.on_success is not None or strategy.on_failure is not None
    rules = bool(strategy.deletion_rules)
    if rules and shutdown:
        return (
            f"{_INVALID}spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules "
            "are mutually exclusive"
        )
    if rules and legacy:
        return (
            f"{_INVALID}Cannot use both legacy onSuccess/onFailure fields and deletionRules "
            "simultaneously"
        )
    if legacy:
        return _legacy_problem(spec)
    if rules:
        return "\n".join(_rule_problems(spec)) or None
    return (
        f"{_INVALID}DeletionStrategy requires either BOTH onSuccess and onFailure, OR the "
        "deletionRules field (cannot be empty)"
    )


def _legacy_problem(spec: RayJobSpec) -> str | None:
    strategy = spec.deletion_strategy
    assert strategy is not None
    if strategy.on_success is None or strategy.on_failure is None:
        return (
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when "
            "using the legacy deletion policy fields of DeletionStrategy"
        )
    on_success, on_failure = strategy.on_success.policy, strategy.on_failure.policy
    for wire, policy in (("OnSuccess", on_success), ("OnFailure", on_failure)):
        if policy is None:
            return (
                f"the DeletionPolicyType field of DeletionStrategy.{wire} cannot be unset when "
                "DeletionStrategy is enabled"
            )
    assert on_success is not None and on_failure is not None
    if spec.cluster_selector:
        for when, policy in (("success", on_success), ("failure", on_failure)):
            if policy in _CLUSTER_POLICIES:
                return (
                    f"the ClusterSelector mode doesn't support DeletionStrategy={policy} on {when}"
                )
    workers = DeletionPolicyType.DELETE_WORKERS
    if workers in (on_success, on_failure) and is_autoscaling_enabled(spec.ray_cluster_spec):
        return (
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with "
            "autoscaling enabled"
        )
    none = DeletionPolicyType.DELETE_NONE
    if spec.shutdown_after_job_finishes and none in (on_success, on_failure):
        return (
            f"{_INVALID}shutdownAfterJobFinshes is set to 'true' while deletion policy is "
            "'DeleteNone'"
        )
    return None


def _condition_problem(rule: DeletionRule) -> str:
    condition = rule.condition
    has_job, has_deployment = (
        condition.job_status is not None,
        condition.job_deployment_status is not None,
    )
    if has_job and has_deployment:
        return "cannot set both JobStatus and JobDeploymentStatus at the same time"
    if not has_job and not has_deployment:
        return "exactly one of JobStatus and JobDeploymentStatus must be set"
    if condition.ttl_seconds < 0:
        return "TTLSeconds must be non-negative"
    return ""


def _rule_problems(spec: RayJobSpec) -> list[str]:
    strategy = spec.deletion_strategy
    assert strategy is not None
    selector = bool(spec.cluster_selector)
    autoscaling = is_autoscaling_enabled(spec.ray_cluster_spec)
    grouped: dict[tuple[str, str], dict[DeletionPolicyType, int]] = {}
    problems = []
    for i, rule in enumerate(strategy.deletion_rules or ()):
        if problem := _condition_problem(rule):
            problems.append(f"deletionRules[{i}]: {problem}")
            continue
        if selector and rule.policy in _CLUSTER_POLICIES:
            problems.append(
                f"deletionRules[{i}]: DeletionPolicyType '{rule.policy}' not supported when "
                "ClusterSelector is set"
            )
            continue
        if autoscaling and rule.policy == DeletionPolicyType.DELETE_WORKERS:
            problems.append(
                f"deletionRules[{i}]: DeletionPolicyType 'DeleteWorkers' not supported with "
                "autoscaling enabled"
            )
            continue
        condition = rule.condition
        if condition.job_status is not None:
            key = ("JobStatus", str(condition.job_status))
        else:
            key = ("JobDeploymentStatus", str(condition.job_deployment_status))
        ttls = grouped.setdefault(key, {})
        if rule.policy in ttls:
            problems.append(
                f"deletionRules[{i}]: duplicate rule for DeletionPolicyType '{rule.policy}' and "
                f"{key[0]} '{key[1]}'"
            )
            continue
        ttls[rule.policy] = condition.ttl_seconds
    for (kind, value), ttls in grouped.items():
        previous: tuple[DeletionPolicyType, int] | None = None
        for policy in _ORDER:
            if policy not in ttls:
                continue
            ttl = ttls[policy]
            if previous is not None and ttl < previous[1]:
                problems.append(
                    f"for {kind} '{value}': {policy} TTL ({ttl}) must be >= {previous[0]} TTL "
                    f"({previous[1]})"
                )
            previous = (policy, ttl)
    return problems
