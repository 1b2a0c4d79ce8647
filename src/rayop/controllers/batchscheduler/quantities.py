"""Resource lists as KubeRay's gang schedulers sum them: exact quantities printed as Go prints them.

A :class:`Amount` is an exact value (a :class:`~fractions.Fraction`) and the suffix family Go's
``resource.Quantity`` keeps for it: a sum takes the family of its first non-zero operand and a
product keeps it, so ``1`` + ``2`` prints ``3``, ``2Gi`` + ``200Mi`` prints ``2248Mi`` and
``500m`` x 2 prints ``1``. Printing is Go's canonical form (``Quantity.String``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = ["Amount", "ResourceList", "add_lists", "parse_list", "scale_list", "wire_list"]

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}
_NUMBER = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")


@dataclass(frozen=True, slots=True)
class Amount:
    """An exact resource quantity and the format (``BinarySI``, ``DecimalSI``...) it prints in."""

    value: Fraction
    format: str = "DecimalSI"

    @classmethod
    def parse(cls, text: object) -> Amount:
        """Reads a quantity as the API server stores it (a string, or a JSON number).

        Raises:
            ValueError: ``text`` is not a Kubernetes quantity.
        """
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            raise ValueError(f"not a quantity: {text!r}")
        if not isinstance(text, str):
            return cls(Fraction(str(text)))
        match = _NUMBER.match(text.strip())
        if not match:
            raise ValueError(f"quantities must match the regular expression: {text!r}")
        number, suffix = Fraction(match.group(1)), match.group(2)
        if suffix in _BINARY:
            return cls(number * 1024 ** _BINARY[suffix], "BinarySI")
        if suffix in _DECIMAL:
            return cls(number * Fraction(10) ** _DECIMAL[suffix])
        exponent = _EXPONENT.match(suffix)
        if exponent:
            return cls(number * Fraction(10) ** int(exponent.group(1)), "DecimalExponent")
        raise ValueError(f"unable to parse quantity's suffix: {text!r}")

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.value + other.value, other.format if self.value == 0 else self.format)

    def times(self, factor: int) -> Amount:
        """Returns the amount multiplied by ``factor`` (Go's ``Quantity.Mul``)."""
        return Amount(self.value * factor, self.format)

    def __str__(self) -> str:
        value = Fraction(math.ceil(self.value * 10**9), 10**9)
        if value == 0:
            return "0"
        fmt = self.format
        if fmt == "BinarySI" and (abs(value) < 1024 or value.denominator != 1):
            fmt = "DecimalSI"
        if fmt == "BinarySI":
            number, power = int(value), 0
            while number % 1024 == 0 and power < 6:
                number, power = number // 1024, power + 1
            return f"{number}{_BINARY_SUFFIX.get(power, '')}"
        mantissa, exponent = int(value * 10**9), -9
        while mantissa % 1000 == 0 and exponent < 18:
            mantissa, exponent = mantissa // 1000, exponent + 3
        if fmt == "DecimalExponent":
            return str(mantissa) if exponent == 0 else f"{mantissa}e{exponent}"
        return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"


ResourceList = dict[str, Amount]
"""Resource name -> amount (Go's ``corev1.ResourceList``)."""


def parse_list(resources: Mapping[str, Any] | None) -> ResourceList:
    """Parses a ``requests`` or ``limits`` mapping; a missing one is empty.

    Raises:
        ValueError: a value is not a quantity.
    """
    return {str(name): Amount.parse(value) for name, value in (resources or {}).items()}


def add_lists(lists: Iterable[Mapping[str, Amount]]) -> ResourceList:
    """Adds resource lists name by name, in order (KubeRay's ``SumResourceList``)."""
    total: ResourceList = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total[name] + amount if name in total else amount
    return total


def scale_list(resources: Mapping[str, Amount], factor: int) -> ResourceList:
    """Multiplies every amount of a resource list by ``factor``."""
    return {name: amount.times(factor) for name, amount in resources.items()}


def wire_list(resources: Mapping[str, Amount]) -> dict[str, str]:
    """Returns a resource list as Go's JSON encoding writes it (names sorted, canonical values)."""
    return {name: str(resources[name]) for name in sorted(resources)}
