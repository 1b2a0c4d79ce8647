"""Kubernetes resource quantities and a pod's effective requests, as the scheduler counts them.

A quantity ("500m", "2Gi", "1e3", "4") is parsed into an exact :class:`~fractions.Fraction`.
A pod's request of each resource is the larger of its regular init containers' largest request
and the sum of its containers' (plus restartable "sidecar" init containers'), plus
``spec.overhead``, the rule kube-scheduler's NodeResourcesFit plugin applies. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj

__all__ = ["parse_quantity", "pod_requests"]


_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


def parse_quantity(value: object) -> Fraction:
    """Parses a quantity (a string or a number).

    Raises:
        ValueError: the value is not a Kubernetes quantity.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Fraction(value)
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if m is None:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * _SUFFIXES[m.group(3) or ""]


def _requests(container: Obj) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    requests: Mapping[str, Any] = resources.get("requests") or {}
    limits: Mapping[str, Any] = resources.get("limits") or {}
    out: dict[str, Fraction] = {}
    for name, value in {**limits, **requests}.items():  # a limit alone defaults the request
        try:
            out[str(name)] = parse_quantity(value)
        except ValueError:
            continue
    return out


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
