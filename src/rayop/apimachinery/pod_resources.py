"""A pod's total of a per-container amount (requests or limits), by the rule Kubernetes sizes a
pod with: the larger of its regular init containers' peak and the sum of its containers (plus
restartable "sidecar" init containers, which run beside everything started after them).

The rule of ``k8s.io/component-helpers/resource`` (``PodRequests``/``PodLimits``), which the
scheduler and quota both use:
https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/component-helpers/resource/helpers.go
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction

from rayop.apimachinery.objects import Obj

__all__ = ["pod_totals"]

PerContainer = Callable[[Obj], Mapping[str, Fraction]]
"""Reads one amount per resource name from a container (its requests, or its limits)."""


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + value


def pod_totals(pod: Obj, per_container: PerContainer) -> dict[str, Fraction]:
    """Returns the pod's total of ``per_container`` by name (``spec.overhead`` not included)."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        if isinstance(container, dict):
            _add(total, per_container(container))
    sidecars: dict[str, Fraction] = {}
    peak: dict[str, Fraction] = {}
    for init in spec.get("initContainers") or []:
        if not isinstance(init, dict):
            continue
        need = per_container(init)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, need)
            continue
        for name, value in need.items():  # a regular init runs beside the sidecars before it
            peak[name] = max(peak.get(name, Fraction(0)), value + sidecars.get(name, Fraction(0)))
    _add(total, sidecars)
    for name, value in peak.items():
        total[name] = max(total.get(name, Fraction(0)), value)
    return total
