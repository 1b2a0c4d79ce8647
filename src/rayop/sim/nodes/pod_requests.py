"""A pod's effective requests, as the scheduler counts them (exact fractions).

A pod's request of each resource is the larger of its regular init containers' largest request
and the sum of its containers' (plus restartable "sidecar" init containers'), plus
``spec.overhead``, the rule kube-scheduler's NodeResourcesFit plugin applies. Pure functions;
quantities are read by :mod:`rayop.apimachinery.quantity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.quantity import container_requests, parse_quantity

__all__ = ["pod_requests"]


def _requests(container: Obj) -> dict[str, Fraction]:
    """A container's requests (a limit alone stands for the request); bad values are left out."""
    requests = container_requests(container, skip_invalid=True)
    return {name: quantity.value for name, quantity in requests.items()}


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + value


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """Returns what a pod requests of each resource (without the implicit "pods": 1)."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        if isinstance(container, dict):
            _add(total, _requests(container))
    sidecars: dict[str, Fraction] = {}
    peak: dict[str, Fraction] = {}
    for init in spec.get("initContainers") or []:
        if not isinstance(init, dict):
            continue
        need = _requests(init)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, need)
            continue
        for name, value in need.items():  # a regular init runs beside the sidecars before it
            peak[name] = max(peak.get(name, Fraction(0)), value + sidecars.get(name, Fraction(0)))
    _add(total, sidecars)
    for name, value in peak.items():
        total[name] = max(total.get(name, Fraction(0)), value)
    overhead: Mapping[str, Any] = spec.get("overhead") or {}
    _add(total, {str(k): parse_quantity(v) for k, v in overhead.items()})
    return {name: value for name, value in total.items() if value}
