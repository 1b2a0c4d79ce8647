"""Kubernetes resource quantities ("500m", "2Gi", "40G", "1e3") and pod resource arithmetic.

:class:`Quantity` keeps the exact value (a :class:`~fractions.Fraction`) and the suffix family it
was written in, so sums print the way ``resource.Quantity`` prints them (``"6Gi"``, ``"2"``,
``"1500m"``). Parsing follows the Kubernetes quantity grammar; an unparsable string raises
:class:`ValueError`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP = {v: k for k, v in _BINARY.items()}
_PATTERN = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")
_GPU_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


@dataclass(frozen=True)
class Quantity:
    """An exact resource amount plus the suffix family used to print it."""

    value: Fraction
    format: Format = "DecimalSI"

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parses a Kubernetes quantity string (or a JSON number); raises ValueError if malformed.

        Results are memoised (a Quantity is immutable): every pass re-reads the same templates.
        """
        return _parse_quantity(text)

    @classmethod
    def _parse(cls, text: str | int | float) -> Quantity:
        if isinstance(text, bool):
            raise ValueError(f"not a quantity: {text!r}")
        if isinstance(text, int | float):
            return cls(Fraction(str(text)), "DecimalSI")
        match = _PATTERN.match(text.strip())
        if not match:
            raise ValueError(f"quantities must match the regular expression: {text!r}")
        number, suffix = Fraction(match.group(1)), match.group(2)
        if suffix in _BINARY:
            return cls(number * 1024 ** _BINARY[suffix], "BinarySI")
        if suffix in _DECIMAL:
            return cls(number * Fraction(10) ** _DECIMAL[suffix], "DecimalSI")
        exp = _EXPONENT.match(suffix)
        if exp:
            return cls(number * Fraction(10) ** int(exp.group(1)), "DecimalExponent")
        raise ValueError(f"unable to parse quantity's suffix: {text!r}")

    def is_zero(self) -> bool:
        """Tells whether the amount is zero."""
        return self.value == 0

    def int_value(self) -> int:
        """Returns the amount rounded up away from zero, like ``Quantity.Value()``."""
        return math.ceil(self.value) if self.value >= 0 else -math.ceil(-self.value)

    def as_float(self) -> float:
        """Returns the approximate float value, like ``AsApproximateFloat64``."""
        return float(self.value)

    def __add__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.value * factor, self.format)

    def __str__(self) -> str:
        return self.canonical()

    def canonical(self) -> str:
        """Formats the amount in the canonical form Kubernetes serialises quantities in."""
        value = _round_up_to_nano(self.value)
        if value == 0:
            return "0"
        fmt = self.format
        if fmt == "BinarySI" and (abs(value) < 1024 or value.denominator != 1):
            fmt = "DecimalSI"
        if fmt == "BinarySI":
            return _format_binary(int(value))
        mantissa, exp = _decimal_parts(value)
        if fmt == "DecimalExponent":
            return f"{mantissa}" if exp == 0 else f"{mantissa}e{exp}"
        while exp > 18:
            mantissa, exp = mantissa * 1000, exp - 3
        return f"{mantissa}{_DECIMAL_BY_EXP[exp]}"


ZERO = Quantity(Fraction(0), "DecimalSI")
_parse_quantity = functools.lru_cache(maxsize=4096, typed=True)(Quantity._parse)


def _round_up_to_nano(value: Fraction) -> Fraction:
    scaled = value * 10**9
    if scaled.denominator == 1:
        return value
    rounded = math.ceil(scaled) if scaled > 0 else -math.ceil(-scaled)
    return Fraction(rounded, 10**9)


def _decimal_parts(value: Fraction) -> tuple[int, int]:
    """Splits a value (a multiple of 1e-9) into mantissa * 10**exp with exp a multiple of 3."""
    exp = -9
    mantissa = int(value * 10**9)
    while mantissa % 1000 == 0 and mantissa != 0 and exp < 18:
        mantissa //= 1000
        exp += 3
    return mantissa, exp


def _format_binary(value: int) -> str:
    exp = 0
    while value % 1024 == 0 and exp < 6:
        value //= 1024
        exp += 1
    return f"{value}{_BINARY_BY_EXP.get(exp, '')}"


def parse_resource_list(resources: Mapping[str, Any] | None) -> dict[str, Quantity]:
    """Parses a ``{name: quantity}`` mapping (limits or requests); missing means empty."""
    return {name: Quantity.parse(v) for name, v in (resources or {}).items()}


def is_gpu_resource(name: str) -> bool:
    """Tells whether a resource name counts as a GPU for KubeRay (``*gpu`` or NVIDIA MIG)."""
    return name.endswith("gpu") or bool(_GPU_MIG.search(name))


def container_resources(container: Mapping[str, Any]) -> dict[str, Quantity]:
    """Returns a container's resources, requests winning over limits for each name."""
    res = container.get("resources") or {}
    merged = parse_resource_list(res.get("requests"))
    for name, q in parse_resource_list(res.get("limits")).items():
        merged.setdefault(name, q)
    return merged


def pod_resources(pod_spec: Mapping[str, Any]) -> dict[str, Quantity]:
    """Sums the resources of a pod spec's containers (not init containers), as KubeRay does."""
    total: dict[str, Quantity] = {}
    for container in pod_spec.get("containers") or []:
        for name, q in container_resources(container).items():
            total[name] = total[name] + q if name in total else q
    return total


def sum_resource_lists(lists: Iterable[Mapping[str, Quantity]]) -> dict[str, Quantity]:
    """Adds several resource lists name by name."""
    total: dict[str, Quantity] = {}
    for resources in lists:
        for name, q in resources.items():
            total[name] = total[name] + q if name in total else q
    return total


def memory_size_limit(container: Mapping[str, Any]) -> str | None:
    """Returns the container's memory limit, else its request, in canonical form; None if neither."""
    res = container.get("resources") or {}
    for key in ("limits", "requests"):
        value = (res.get(key) or {}).get("memory")
        if value is not None:
            return Quantity.parse(value).canonical()
    return None
