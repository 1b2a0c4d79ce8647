"""Kubernetes resource quantities as Go's ``resource.Quantity`` writes them back to JSON.

KubeRay hashes specs that went through Go's typed structs, so a quantity is hashed in the form
``Quantity.MarshalJSON`` gives after ``UnmarshalJSON``: the canonical form (``0.5`` -> ``500m``,
``1.5Gi`` -> ``1536Mi``, ``4000000000`` -> ``4G``), except that a string the parser already
finds canonical is kept verbatim (``12e6``, ``1023Ki``). Values are exact (``Fraction``), rounded
up to nano units as the parser does.
"""

from __future__ import annotations

import math
from fractions import Fraction

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_DECIMAL_SUFFIXES.update({"P": 15, "E": 18})
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {e: s for s, e in _BINARY_SUFFIXES.items()}
_MAX_INT64 = 2**63 - 1
_MAX_INT64_FACTORS = 18
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """A value that Go's ``resource.ParseQuantity`` refuses."""


def canonical_quantity(value: str | int | float) -> str:
    """Returns the JSON string Go writes for a quantity read from ``value`` (a JSON string or number).

    Raises:
        QuantityError: ``value`` is not a quantity (Go's decoder would fail too).
    """
    if isinstance(value, bool):
        raise QuantityError(f"quantity: {value!r} is not a number or string")
    text = value.strip() if isinstance(value, str) else _number_text(value)
    if not text:
        raise QuantityError("quantity: empty string")
    if text == "0":
        return "0"
    positive, number, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    fast = _int64_path(text, positive, num, denom, base, exponent, fmt)
    if isinstance(fast, str):
        return fast
    if fast is not None:
        return _canonical(fast, fmt)
    amount = Fraction(number) * (Fraction(10) ** exponent if base == 10 else 2**exponent)
    magnitude = abs(amount)
    if magnitude:
        magnitude = Fraction(math.ceil(magnitude / _NANO)) * _NANO
    if fmt == BINARY_SI and magnitude > _MAX_INT64:
        magnitude = Fraction(_MAX_INT64)
    if fmt == BINARY_SI and 0 < magnitude < 1:
        fmt = DECIMAL_SI
    return _canonical(magnitude if amount >= 0 else -magnitude, fmt)


def _number_text(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """Splits ``text`` as Go's parser does: (positive, number part, numerator, fraction, suffix)."""
    pos, end, positive = 0, len(text), True
    if text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isdigit() and text[pos].isascii():
            pos += 1
        denom = text[start:pos]
    number, suffix = text[:pos], text[pos:]
    if number in ("", "+", "-", ".", "+.", "-."):
        number = number.rstrip(".") + "0"
    body = suffix.lstrip("eEinumkKMGTP")
    if body[:1] in ("+", "-"):
        body = body[1:]
    if body and not (body.isdigit() and body.isascii()):
        raise QuantityError(f"quantity {text!r}: quantities must match the regular expression")
    return positive, number.rstrip("."), num, denom, suffix


def _interpret(suffix: str) -> tuple[int, int, str]:
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        digits = rest[1:] if rest[:1] in ("+", "-") else rest
        if digits.isdigit() and digits.isascii():
            return 10, int(rest), DECIMAL_EXPONENT
    raise QuantityError(f"quantity suffix {suffix!r}: unable to parse quantity's suffix")


def _int64_path(
    text: str, positive: bool, num: str, denom: str, base: int, exponent: int, fmt: str
) -> str | Fraction | None:
    """Go's int64 fast path: the verbatim text when canonical, else the exact value, else None."""
    mantissa, scale = 1, 0
    if fmt in (DECIMAL_SI, DECIMAL_EXPONENT):
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
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
    if value > _MAX_INT64 or value * mantissa > _MAX_INT64:
        return None
    if fmt == BINARY_SI:
        if exponent % 10 == 0 and value & 0x07:
            return text
    elif _go_mod(scale, 3) == 0 and not shifted.endswith("000") and shifted[0] != "0":
        return text
    result = value * mantissa
    return Fraction(result if positive else -result) * Fraction(10) ** scale


def _go_mod(a: int, b: int) -> int:
    """Returns ``a % b`` with Go's sign rule (truncated division)."""
    return int(math.copysign(abs(a) % b, a)) if a else 0


def _canonical(amount: Fraction, fmt: str) -> str:
    """Returns ``Quantity.CanonicalizeBytes`` of an exact amount (a multiple of 1e-9)."""
    if amount == 0:
        return "0"
    if fmt == BINARY_SI:
        if -1024 < amount < 1024 or amount.denominator != 1:
            fmt = DECIMAL_SI
        else:
            number, power = int(amount), 0
            while number % 1024 == 0:
                number //= 1024
                power += 10
            return f"{number}{_BINARY_BY_EXPONENT.get(power, '')}"
    scaled = amount * 10**9
    number, power = int(scaled), -9
    while number % 10 == 0:
        number //= 10
        power += 1
    aligned = 3 * math.floor(power / 3)
    number *= 10 ** (power - aligned)
    if fmt == DECIMAL_EXPONENT:
        return f"{number}e{aligned}" if aligned else str(number)
    return f"{number}{_DECIMAL_BY_EXPONENT.get(aligned, '')}"
