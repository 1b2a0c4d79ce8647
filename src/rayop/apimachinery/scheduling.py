"""The filters kube-scheduler applies before it binds a pod, and its FailedScheduling message.

What KubeRay's pods rely on, in kube-scheduler's plugin order: the pod's claims (VolumeBinding's
PreFilter: a missing, terminating or unbound immediate PersistentVolumeClaim leaves the pod
unschedulable on every node), then per node NodeUnschedulable, TaintToleration (NoSchedule and
NoExecute taints), NodeAffinity (``nodeSelector`` and required node affinity) and
NodeResourcesFit (requests against allocatable minus what the node's pods already request, and
the pod count). A node fails on the first filter that refuses it; the message is kube-scheduler's
FitError text with its preemption post-filter note. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.quantity import parse_quantity

__all__ = [
    "ClaimState",
    "NodeView",
    "claim_problem",
    "fit_message",
    "node_problems",
    "prefilter_message",
]

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE_NODE = "node(s) were unschedulable"
TOO_MANY_PODS = "Too many pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass
class NodeView:
    """What the filters read of one node, and what its pods already request."""

    name: str
    labels: Mapping[str, str]
    taints: list[Obj]
    allocatable: dict[str, Fraction]
    unschedulable: bool = False
    requested: dict[str, Fraction] = field(default_factory=dict)
    pods: int = 0

    @classmethod
    def of(cls, node: Obj) -> NodeView:
        """Reads a Node object."""
        md, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status")
        allocatable: dict[str, Fraction] = {}
        for name, value in ((status or {}).get("allocatable") or {}).items():
            try:
                allocatable[str(name)] = parse_quantity(value)
            except ValueError:
                continue
        return cls(
            name=str(md.get("name") or ""),
            labels=dict(md.get("labels") or {}),
            taints=[t for t in spec.get("taints") or [] if isinstance(t, dict)],
            allocatable=allocatable,
            unschedulable=bool(spec.get("unschedulable")),
        )


@dataclass(frozen=True)
class ClaimState:
    """A PersistentVolumeClaim as VolumeBinding's PreFilter sees it."""

    exists: bool
    deleting: bool = False
    bound: bool = False
    delayed: bool = False
    """Unbound, but its StorageClass binds WaitForFirstConsumer (provisioned once scheduled)."""


def pod_claims(pod: Obj) -> list[str]:
    """Returns the names of the PersistentVolumeClaims the pod's volumes use, in order."""
    names: list[str] = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        claim = (volume or {}).get("persistentVolumeClaim") or {}
        if claim.get("claimName") and claim["claimName"] not in names:
            names.append(str(claim["claimName"]))
    return names


def claim_problem(claims: Mapping[str, ClaimState]) -> str | None:
    """Returns why the pod's claims make it unschedulable everywhere, or None."""
    for name, state in claims.items():
        if not state.exists:
            return f'persistentvolumeclaim "{name}" not found'
        if state.deleting:
            return f'persistentvolumeclaim "{name}" is being deleted'
    if any(not s.bound and not s.delayed for s in claims.values()):
        return UNBOUND_IMMEDIATE
    return None


def _tolerates(toleration: Obj, taint: Obj) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    return operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")


def _untolerated(pod: Obj, node: NodeView) -> Obj | None:
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or [] if t]
    for taint in node.taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return taint
    return None


def _expression_holds(expr: Obj, values_of: Mapping[str, str]) -> bool:
    key, op = str(expr.get("key") or ""), str(expr.get("operator") or "")
    wanted = [str(v) for v in expr.get("values") or []]
    present = key in values_of
    value = values_of.get(key, "")
    if op == "In":
        return present and value in wanted
    if op == "NotIn":
        return not present or value not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, limit = int(value), int(wanted[0])
        except ValueError:
            return False
        return have > limit if op == "Gt" else have < limit
    return False


def _affinity_matches(pod: Obj, node: NodeView) -> bool:
    spec = pod.get("spec") or {}
    selector: Mapping[str, Any] = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != str(v) for k, v in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = [t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict)]
    if not terms:
        return True
    fields = {"metadata.name": node.name}
    return any(
        (t.get("matchExpressions") or t.get("matchFields"))
        and all(_expression_holds(e, node.labels) for e in t.get("matchExpressions") or [])
        and all(_expression_holds(e, fields) for e in t.get("matchFields") or [])
        for t in terms
    )


def node_problems(
    pod: Obj, node: NodeView, requests: Mapping[str, Fraction]
) -> tuple[list[str], bool]:
    """Returns why ``node`` cannot take the pod (empty when it fits) and whether preemption
    could help (only a lack of resources can be resolved by evicting pods)."""
    if node.unschedulable and not any(
        t.get("key") == "node.kubernetes.io/unschedulable" and t.get("operator") == "Exists"
        for t in (pod.get("spec") or {}).get("tolerations") or []
        if t
    ):
        return [UNSCHEDULABLE_NODE], False
    taint = _untolerated(pod, node)
    if taint is not None:
        reason = (
            f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"
        )
        return [reason], False
    if not _affinity_matches(pod, node):
        return [AFFINITY], False
    reasons: list[str] = []
    if node.pods + 1 > node.allocatable.get("pods", Fraction(0)):
        reasons.append(TOO_MANY_PODS)
    for name in sorted(requests):
        free = node.allocatable.get(name, Fraction(0)) - node.requested.get(name, Fraction(0))
        if requests[name] > free:
            reasons.append(f"Insufficient {name}")
    return reasons, True


def _histogram(counts: Mapping[str, int]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def prefilter_message(nodes: int, problem: str) -> str:
    """Returns the FailedScheduling message for a pod refused before any node is tried.

    kube-scheduler v1.37 ends it with its preemption post-filter's "not found" (no node was
    tried, so there is no candidate to look up), as the real tier's conformance run shows.
    """
    return f"0/{nodes} nodes are available: {problem}. not found"


def fit_message(problems: Mapping[str, tuple[list[str], bool]]) -> str:
    """Returns the FailedScheduling message from every node's refusal (name -> reasons)."""
    nodes = len(problems)
    reasons: dict[str, int] = {}
    preemption: dict[str, int] = {}
    for node_reasons, resolvable in problems.values():
        for reason in node_reasons:
            reasons[reason] = reasons.get(reason, 0) + 1
        key = NO_VICTIMS if resolvable else NOT_HELPFUL
        preemption[key] = preemption.get(key, 0) + 1
    if not nodes:
        return "no nodes available to schedule pods"
    return (
        f"0/{nodes} nodes are available: {_histogram(reasons)}. "
        f"preemption: 0/{nodes} nodes are available: {_histogram(preemption)}."
    )
