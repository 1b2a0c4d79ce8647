"""What an object uses of a ResourceQuota, and which quotas cover it: kube's quota evaluators.

A pod uses ``count/pods`` always and, unless it has ended (phase Succeeded or Failed), ``pods``
and its compute resources: ``cpu``/``requests.cpu``, ``memory``/``requests.memory``,
``ephemeral-storage``/``requests.ephemeral-storage`` from its requests (a limit stands for a
missing request, as API defaulting makes it), ``limits.*`` from its limits, ``hugepages-*`` and
extended resources as ``requests.<name>``. Any other object uses ``count/<resource>.<group>``
(``count/<resource>`` for the core group), the core kinds their legacy names too (``services``,
``configmaps``, ``secrets``, ``persistentvolumeclaims``, ``resourcequotas``...), a Service
``services.loadbalancers``/``services.nodeports``, a PersistentVolumeClaim ``requests.storage``.
Quota scopes (``scopes`` and ``scopeSelector``) select pods: Terminating, NotTerminating,
BestEffort, NotBestEffort, PriorityClass. Follows ``pkg/quota/v1/evaluator/core``:
https://github.com/kubernetes/kubernetes/blob/master/pkg/quota/v1/evaluator/core/pods.go
Not covered: storage-class scoped PVC names, CrossNamespacePodAffinity and VolumeAttributesClass
scopes, a quota whose scopes select non-pod objects (it covers none, as kube's count evaluator).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.pod_resources import pod_totals
from rayop.apimachinery.quantity import Quantity, QuantityError, container_requests
from rayop.sim.machinery.resources import ResourceInfo

__all__ = [
    "Usage",
    "covered_names",
    "missing_requests",
    "object_usage",
    "quota_selects",
    "resource_key_of",
]

Usage = dict[str, Fraction]
"""Resource name -> amount."""

_POD_NAMES = frozenset(
    {
        "pods",
        "count/pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    }
)
_MUST_SPECIFY = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
"""The names a quota that tracks them obliges every container to set (kube's validationSet)."""
_LEGACY_COUNTS = {
    "/services": "services",
    "/configmaps": "configmaps",
    "/secrets": "secrets",
    "/persistentvolumeclaims": "persistentvolumeclaims",
    "/replicationcontrollers": "replicationcontrollers",
    "/resourcequotas": "resourcequotas",
}
_NATIVE_PREFIXES = ("kubernetes.io/", "requests.", "limits.")


def resource_key_of(name: str) -> str | None:
    """The storage key (``group/plural``) a quota name counts, or None for compute names."""
    if name.startswith("count/"):
        plural, _, group = name.removeprefix("count/").partition(".")
        return f"{group}/{plural}"
    if name in _POD_NAMES or _is_pod_name(name):
        return "/pods"
    for key, legacy in _LEGACY_COUNTS.items():
        if name == legacy:
            return key
    if name in ("services.loadbalancers", "services.nodeports"):
        return "/services"
    if name == "requests.storage":
        return "/persistentvolumeclaims"
    return None


def _is_pod_name(name: str) -> bool:
    if name.startswith(("hugepages-", "requests.hugepages-")):
        return True
    return name.startswith("requests.") and _is_extended(name.removeprefix("requests."))


def _is_extended(name: str) -> bool:
    """An extended resource: a domain-qualified name outside kubernetes.io (``nvidia.com/gpu``)."""
    return "/" in name and not name.startswith(_NATIVE_PREFIXES)


def covered_names(info: ResourceInfo, hard: Mapping[str, Any]) -> list[str]:
    """The names of ``hard`` that objects of ``info`` use (kube's MatchingResources)."""
    return sorted(name for name in hard if resource_key_of(name) == info.key)


def _amounts(resources: Any) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, value in (resources or {}).items() if isinstance(resources, Mapping) else ():
        try:
            out[str(name)] = Quantity.parse(value).value
        except QuantityError:
            continue
    return out


def _requests(container: Obj) -> dict[str, Fraction]:
    return {n: q.value for n, q in container_requests(container, skip_invalid=True).items()}


def _limits(container: Obj) -> dict[str, Fraction]:
    return _amounts((container.get("resources") or {}).get("limits"))


def _compute(requests: Mapping[str, Fraction], limits: Mapping[str, Fraction]) -> Usage:
    """kube's podComputeUsageHelper: a pod's (or container's) compute names."""
    out: Usage = {"pods": Fraction(1)}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = value
        elif _is_extended(name):
            out[f"requests.{name}"] = value
    return out


def _pod_usage(pod: Obj) -> Usage:
    usage: Usage = {"count/pods": Fraction(1)}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return usage
    overhead = _amounts((pod.get("spec") or {}).get("overhead"))
    requests = pod_totals(pod, _requests)
    limits = pod_totals(pod, _limits)
    for name, value in overhead.items():
        requests[name] = requests.get(name, Fraction(0)) + value
        if name in limits:
            limits[name] += value
    usage.update(_compute(requests, limits))
    return usage


def object_usage(info: ResourceInfo, obj: Obj) -> Usage:
    """What one object uses of quota (every name it can use; zero amounts included)."""
    if info.key == "/pods":
        return _pod_usage(obj)
    group = f".{info.group}" if info.group else ""
    usage: Usage = {f"count/{info.plural}{group}": Fraction(1)}
    legacy = _LEGACY_COUNTS.get(info.key)
    if legacy:
        usage[legacy] = Fraction(1)
    spec = obj.get("spec") or {}
    if info.key == "/services":
        kind = spec.get("type", "ClusterIP")
        usage["services.loadbalancers"] = Fraction(kind == "LoadBalancer")
        ports = len(spec.get("ports") or ()) if kind in ("NodePort", "LoadBalancer") else 0
        usage["services.nodeports"] = Fraction(ports)
    elif info.key == "/persistentvolumeclaims":
        storage = _amounts((spec.get("resources") or {}).get("requests")).get("storage")
        usage["requests.storage"] = storage or Fraction(0)
    return usage


def missing_requests(pod: Obj, covered: list[str]) -> str:
    """kube's pod Constraints: "" when every container sets what the quota obliges, else
    ``must specify <name> for: <containers>; ...``."""
    required = _MUST_SPECIFY.intersection(covered)
    if not required:
        return ""
    spec = pod.get("spec") or {}
    missing: dict[str, set[str]] = {}
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        if not isinstance(container, dict):
            continue
        has = _compute(_requests(container), _limits(container))
        for name in required - set(has):
            missing.setdefault(name, set()).add(str(container.get("name", "")))
    if not missing:
        return ""
    parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
    return "must specify " + "; ".join(parts)


def quota_selects(quota: Obj, info: ResourceInfo, obj: Obj) -> bool:
    """Whether the quota's scopes (if any) select the object."""
    spec = quota.get("spec") or {}
    selectors = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    selectors += (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    if not selectors:
        return True
    if info.key != "/pods":
        return False
    return all(_scope_matches(s, obj) for s in selectors)


def _scope_matches(selector: Mapping[str, Any], pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    scope = selector.get("scopeName")
    if scope in ("Terminating", "NotTerminating"):
        deadline = spec.get("activeDeadlineSeconds")
        terminating = isinstance(deadline, int) and deadline >= 0
        return bool(terminating == (scope == "Terminating"))
    if scope in ("BestEffort", "NotBestEffort"):
        return bool(_best_effort(pod) == (scope == "BestEffort"))
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        values = selector.get("values") or ()
        operator = selector.get("operator")
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return bool(name and name in values)
        if operator == "NotIn":
            return bool(not name or name not in values)
    return False


def _best_effort(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        resources = (container or {}).get("resources") or {}
        for part in ("requests", "limits"):
            if any(n in ("cpu", "memory") for n in resources.get(part) or {}):
                return False
    return True
