"""A pod's effective requests, as the scheduler counts them (exact fractions).

A pod's request of each resource is the larger of its regular init containers' largest request
and the sum of its containers' (plus restartable "sidecar" init containers';
:mod:`rayop.apimachinery.pod_resources`), plus ``spec.overhead``, the rule kube-scheduler's
NodeResourcesFit plugin applies. Pure functions; quantities are read by
:mod:`rayop.apimachinery.quantity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.pod_resources import pod_totals
from rayop.apimachinery.quantity import container_requests, parse_quantity

__all__ = ["pod_requests"]


def _requests(container: Obj) -> dict[str, Fraction]:
    """A container's requests (a limit alone stands for the request); bad values are left out."""
    requests = container_requests(container, skip_invalid=True)
    return {name: quantity.value for name, quantity in requests.items()}


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """Returns what a pod requests of each resource (without the implicit "pods": 1)."""
    spec = pod.get("spec") or {}
    total = pod_totals(pod, _requests)
    overhead: Mapping[str, Any] = spec.get("overhead") or {}
    for name, value in overhead.items():
        total[str(name)] = total.get(str(name), Fraction(0)) + parse_quantity(value)
    return {name: value for name, value in total.items() if value}
