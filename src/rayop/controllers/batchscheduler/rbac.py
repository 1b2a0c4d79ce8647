"""The RBAC rules each batch scheduler needs, as KubeRay v1.7's chart grants them.

KubeRay's chart adds them to the operator's ClusterRole (or namespaced Roles) only for the
scheduler it is installed with (``batchScheduler.name``, ``batchScheduler.enabled`` for
Volcano, the ``KubernetesWAS`` feature gate); so does rayop's chart
(``helm/rayop/templates/_batch_scheduler_rules.tpl``, checked against these rules by
``tests/controllers/batchscheduler/test_rbac.py``). YuniKorn and KAI need none: they only label
pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rayop.controllers.assembly.rbac_rules import PolicyRule

__all__ = ["BATCH_SCHEDULER_RULES"]

BATCH_SCHEDULER_RULES: Final[Mapping[str, tuple[PolicyRule, ...]]] = {
    "kubernetes-was": (
        PolicyRule(
            "scheduling.k8s.io",
            ("podgroups", "workloads"),
            ("create", "delete", "get", "list", "patch", "update", "watch"),
        ),
    ),
    "volcano": (
        PolicyRule(
            "scheduling.volcano.sh",
            ("podgroups",),
            ("create", "delete", "get", "list", "update", "watch"),
        ),
    ),
    "scheduler-plugins": (
        PolicyRule("scheduling.x-k8s.io", ("podgroups",), ("create", "get", "list", "watch")),
    ),
}
"""Scheduler (``kubernetes-was`` for the gate) -> the rules the operator needs for it."""
