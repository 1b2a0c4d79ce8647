"""Kubernetes resource quantities (``500m``, ``2Gi``, ``40G``, ``1e3``): parse, add, compare, format.

One lexer reads every quantity (:func:`_lex`) and one table interprets its suffix
(:func:`_interpret`). On top of them:

* :class:`Quantity`: the exact value (a :class:`~fractions.Fraction`) and the suffix family it
  was written in (``BinarySI``, ``DecimalSI``, ``DecimalExponent``). A sum takes the family of
  its first non-zero operand and a product keeps it, so sums print the way Go's
  ``resource.Quantity`` prints them (``1Gi`` + ``1Gi`` = ``2Gi``, ``500m`` x 2 = ``1``).
  :meth:`Quantity.canonical` is the canonical form; above ``E`` it keeps the ``E`` suffix
  (``1000E``).
* :func:`parse_quantity`: the exact value only (what a scheduler compares).
* :func:`go_round_trip`: the JSON string Go writes after reading a quantity
  (``Quantity.UnmarshalJSON`` then ``MarshalJSON``), which KubeRay's spec hashes see: the
  canonical form, except that a text Go's int64 fast path finds canonical is kept verbatim
  (``12e6``, ``007Gi``), a BinarySI value is capped at the int64 maximum, and a decimal value
  above ``E`` loses its suffix (``1000E`` -> ``1``), all as Go does.
* Resource lists (``{name: Quantity}``, Go's ``corev1.ResourceList``): parse, add, scale, write,
  and a container's requests (a limit alone stands for the request).

Values print rounded up (away from zero) to nano units, as Go's parser rounds them. An
unparsable quantity raises :class:`QuantityError` (a :class:`ValueError`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, Literal, NamedTuple

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "ZERO",
    "Format",
    "Quantity",
    "QuantityError",
    "ResourceList",
    "container_requests",
    "go_round_trip",
    "parse_quantity",
    "parse_resource_list",
    "resource_list_json",
    "scale_resource_list",
    "sum_resource_lists",
]

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]
BINARY_SI: Final = "BinarySI"
DECIMAL_SI: Final = "DecimalSI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_SUFFIXES: Final[Mapping[str, tuple[int, int, Format]]] = {
    **{s: (10, e, DECIMAL_SI) for s, e in zip("num", (-9, -6, -3), strict=True)},
    "": (10, 0, DECIMAL_SI),
    **{s: (10, e, DECIMAL_SI) for s, e in zip("kMGTPE", range(3, 19, 3), strict=True)},
    **{f"{s}i": (2, e, BINARY_SI) for s, e in zip("KMGTPE", range(10, 61, 10), strict=True)},
}
"""Suffix -> (base, exponent, format): ``m`` is 10**-3, ``Ki`` is 2**10."""
_DECIMAL_BY_EXPONENT: Final = {e: s for s, (b, e, _) in _SUFFIXES.items() if b == 10}
_BINARY_BY_POWER: Final = {e // 10: s for s, (b, e, _) in _SUFFIXES.items() if b == 2} | {0: ""}
_LEXEME = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_MAX_INT64: Final = 2**63 - 1
_MAX_INT64_DIGITS: Final = 18
_NANO: Final = Fraction(1, 10**9)


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity (Go's ``resource.ParseQuantity`` refuses it)."""


class _Lexeme(NamedTuple):
    negative: bool
    whole: str
    """The digits before the point (may be empty, may have leading zeros)."""
    fraction: str | None
    """The digits after the point (None: no point)."""
    suffix: str


def _lex(text: str) -> _Lexeme:
    """Splits a (stripped) quantity into sign, digits and suffix; the suffix is not checked."""
    match = _LEXEME.fullmatch(text)
    assert match is not None  # every part of the pattern may be empty
    sign, whole, fraction, suffix = match.groups()
    return _Lexeme(sign == "-", whole, fraction, suffix)


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """Returns (base, exponent, format) of a suffix (``Mi``, ``k``, ``e-3``...).

    Raises:
        QuantityError: not a quantity suffix.
    """
    found = _SUFFIXES.get(suffix)
    if found is not None:
        return found
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        digits = rest[1:] if rest[:1] in ("+", "-") else rest
        if digits.isascii() and digits.isdigit():
            return 10, int(rest), DECIMAL_EXPONENT
    raise QuantityError(f"unable to parse quantity's suffix: {suffix!r}")


def _scale(base: int, exponent: int) -> Fraction:
    return Fraction(base) ** exponent


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact resource amount plus the suffix family used to print it."""

    value: Fraction
    format: Format = DECIMAL_SI

    @classmethod
    def parse(cls, text: object) -> Quantity:
        """Parses a quantity as the API server stores it (a string, or a JSON number).

        A number is read from its decimal text (``0.1`` is exactly 1/10), as Go reads a JSON
        number. Results are memoised (a Quantity is immutable).

        Raises:
            QuantityError: ``text`` is not a Kubernetes quantity.
        """
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            raise QuantityError(f"not a quantity: {text!r}")
        return _parse_cached(text)

    @classmethod
    def _parse(cls, text: str | int | float) -> Quantity:
        if not isinstance(text, str):
            try:
                return cls(Fraction(str(text)))
            except ValueError as err:  # inf, nan
                raise QuantityError(f"not a quantity: {text!r}") from err
        lexeme = _lex(text.strip())
        if not (lexeme.whole or lexeme.fraction):
            raise QuantityError(f"quantities must match the regular expression: {text!r}")
        base, exponent, fmt = _interpret(lexeme.suffix)
        number = Fraction(f"{lexeme.whole or 0}.{lexeme.fraction or 0}")
        return cls((-number if lexeme.negative else number) * _scale(base, exponent), fmt)

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
        return Quantity(self.value + other.value, other.format if self.value == 0 else self.format)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.value * factor, self.format)

    def times(self, factor: int) -> Quantity:
        """Returns the amount multiplied by ``factor`` (Go's ``Quantity.Mul``)."""
        return self * factor

    def __str__(self) -> str:
        return self.canonical()

    def canonical(self) -> str:
        """Formats the amount in the canonical form Kubernetes serialises quantities in."""
        return _format(_round_up_to_nano(self.value), self.format, go_suffixes=False)


ZERO = Quantity(Fraction(0))
_parse_cached = functools.lru_cache(maxsize=4096, typed=True)(Quantity._parse)


def parse_quantity(value: object) -> Fraction:
    """Returns the exact value of a quantity (a string or a JSON number).

    Raises:
        QuantityError: the value is not a Kubernetes quantity.
    """
    return Quantity.parse(value).value


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Rounds the magnitude up to a multiple of 1e-9 (Go's parser does so)."""
    if (value / _NANO).denominator == 1:
        return value
    magnitude = Fraction(math.ceil(abs(value) / _NANO)) * _NANO
    return magnitude if value > 0 else -magnitude


def _format(value: Fraction, fmt: Format, *, go_suffixes: bool) -> str:
    """Returns the canonical text of a multiple of 1e-9 (``Quantity.CanonicalizeBytes``).

    ``go_suffixes``: a decimal exponent above 18 keeps no suffix (``1000E`` -> ``1``), as Go
    writes it; otherwise the mantissa grows and the suffix stays ``E``/``e18``.
    """
    if value == 0:
        return "0"
    if fmt == BINARY_SI and (abs(value) < 1024 or value.denominator != 1):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        number, power = int(value), 0
        while number % 1024 == 0 and power < 6:
            number, power = number // 1024, power + 1
        return f"{number}{_BINARY_BY_POWER[power]}"
    mantissa, exponent = int(value / _NANO), -9
    while mantissa % 1000 == 0 and (go_suffixes or exponent < 18):
        mantissa, exponent = mantissa // 1000, exponent + 3
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_BY_EXPONENT.get(exponent, '')}"


def go_round_trip(value: object) -> str:
    """Returns the JSON string Go writes for a quantity it read from ``value`` (string or number).

    Raises:
        QuantityError: ``value`` is not a quantity (Go's decoder would fail too).
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"quantity: {value!r} is not a number or string")
    text = value.strip() if isinstance(value, str) else _number_text(value)
    if not text:
        raise QuantityError("quantity: empty string")
    if text == "0":
        return "0"
    lexeme = _lex(text)
    base, exponent, fmt = _interpret(lexeme.suffix)
    fast = _int64_path(text, lexeme, base, exponent, fmt)
    if isinstance(fast, str):
        return fast
    if fast is not None:
        return _format(fast, fmt, go_suffixes=True)
    number = Fraction(f"{lexeme.whole or 0}.{lexeme.fraction or 0}") * _scale(base, exponent)
    magnitude = _round_up_to_nano(number)
    if fmt == BINARY_SI and magnitude > _MAX_INT64:
        magnitude = Fraction(_MAX_INT64)
    return _format(-magnitude if lexeme.negative else magnitude, fmt, go_suffixes=True)


def _number_text(value: int | float) -> str:
    """Returns a JSON number's text as Go's decoder sees it."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _int64_path(
    text: str, lexeme: _Lexeme, base: int, exponent: int, fmt: Format
) -> str | Fraction | None:
    """Go's int64 fast path: the verbatim text when canonical, else the exact value, else None."""
    num = lexeme.whole.lstrip("0") or "0"
    denom = lexeme.fraction or ""
    mantissa, scale = 1, 0
    if base == 10:
        scale = exponent
        precision = _MAX_INT64_DIGITS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        precision = -1
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    shifted = num + denom
    value = int(shifted)
    if value * mantissa > _MAX_INT64:
        return None
    if fmt == BINARY_SI:
        if exponent % 10 == 0 and value & 0x07:
            return text
    elif _go_mod(scale, 3) == 0 and not shifted.endswith("000") and shifted[0] != "0":
        return text
    result = value * mantissa
    return Fraction(-result if lexeme.negative else result) * Fraction(10) ** scale


def _go_mod(a: int, b: int) -> int:
    """Returns ``a % b`` with Go's sign rule (truncated division)."""
    return int(math.copysign(abs(a) % b, a)) if a else 0


ResourceList = dict[str, Quantity]
"""Resource name -> quantity (Go's ``corev1.ResourceList``)."""


def parse_resource_list(resources: Mapping[str, Any] | None) -> ResourceList:
    """Parses a ``requests`` or ``limits`` mapping; a missing one is empty.

    Raises:
        QuantityError: a value is not a quantity.
    """
    return {str(name): Quantity.parse(value) for name, value in (resources or {}).items()}


def sum_resource_lists(lists: Iterable[Mapping[str, Quantity]]) -> ResourceList:
    """Adds resource lists name by name, in order (KubeRay's ``SumResourceList``)."""
    total: ResourceList = {}
    for resources in lists:
        for name, amount in resources.items():
            total[name] = total[name] + amount if name in total else amount
    return total


def scale_resource_list(resources: Mapping[str, Quantity], factor: int) -> ResourceList:
    """Multiplies every amount of a resource list by ``factor``."""
    return {name: amount * factor for name, amount in resources.items()}


def resource_list_json(resources: Mapping[str, Quantity]) -> dict[str, str]:
    """Returns a resource list as Go's JSON encoding writes it (names sorted, canonical values)."""
    return {name: resources[name].canonical() for name in sorted(resources)}


def container_requests(container: Mapping[str, Any], *, skip_invalid: bool = False) -> ResourceList:
    """Returns what a container requests: its ``requests``, and a limit where no request is given.

    ``skip_invalid``: leave out a name whose value is not a quantity instead of raising (a bad
    request is not replaced by the limit of that name).

    Raises:
        QuantityError: a request or limit is not a quantity (unless ``skip_invalid``).
    """
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        resources = {}
    requests: Mapping[str, Any] = resources.get("requests") or {}
    limits: Mapping[str, Any] = resources.get("limits") or {}
    out: ResourceList = {}
    for name in [*requests, *(n for n in limits if n not in requests)]:
        try:
            out[str(name)] = Quantity.parse(requests[name] if name in requests else limits[name])
        except QuantityError:
            if not skip_invalid:
                raise
    if not skip_invalid:
        parse_resource_list(limits)  # a limit that a request hides must be a quantity too
    return out
