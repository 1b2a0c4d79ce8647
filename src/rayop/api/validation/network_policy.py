"""KubeRay v1.7.0's ``validateNetworkPolicy``: the checks of ``spec.networkPolicy``, in order.

Custom rules of a direction the mode does not restrict would be silently dropped, so KubeRay
refuses them; each ``workerGroups`` entry must name a worker group; and with a network policy
every group name must be a DNS-1123 label (it is part of the policy's name). Messages are
KubeRay's, with Go's ``%q`` quoting.
"""

from __future__ import annotations

import json

from rayop.api.raycluster import NetworkPolicyMode, NetworkPolicyRules, RayClusterSpec
from rayop.api.validation.k8s_names import dns1123_label_errors, go_list

__all__ = ["network_policy_problem"]


def _q(value: str) -> str:
    """Returns ``value`` quoted as Go's ``%q`` quotes a printable string."""
    return json.dumps(value, ensure_ascii=False)


def _rules_problem(where: str, rules: NetworkPolicyRules | None, mode: NetworkPolicyMode) -> str:
    if rules is None:
        return ""
    if mode == NetworkPolicyMode.DENY_ALL_EGRESS and rules.ingress_rules:
        return (
            f"networkPolicy.{where}.ingressRules cannot be set when mode is {_q(str(mode))} "
            "(ingress is not restricted)"
        )
    if mode == NetworkPolicyMode.DENY_ALL_INGRESS and rules.egress_rules:
        return (
            f"networkPolicy.{where}.egressRules cannot be set when mode is {_q(str(mode))} "
            "(egress is not restricted)"
        )
    return ""


def network_policy_problem(spec: RayClusterSpec) -> str:
    """Returns KubeRay's message for the first ``networkPolicy`` check ``spec`` fails, else ""."""
    options = spec.network_policy
    if options is None:
        return ""
    mode = options.mode
    problem = _rules_problem("head", options.head, mode) or _rules_problem(
        "worker", options.worker, mode
    )
    if problem:
        return problem
    group_names = set()
    for group in spec.worker_group_specs or ():
        errors = dns1123_label_errors(group.group_name)
        if errors:
            return (
                f"worker group name {_q(group.group_name)} must be a valid DNS1123 label when "
                "networkPolicy is enabled (it is embedded in the NetworkPolicy name): "
                f"{go_list(errors)}"
            )
        group_names.add(group.group_name)
    for entry in options.worker_groups or ():
        if problem := _rules_problem(f"workerGroups[{_q(entry.group_name)}]", entry, mode):
            return problem
        if entry.group_name not in group_names:
            return (
                f"networkPolicy.workerGroups[{_q(entry.group_name)}] does not match any group "
                "name in workerGroupSpecs"
            )
    return ""
