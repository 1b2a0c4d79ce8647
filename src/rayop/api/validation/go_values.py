"""Go's value formats that KubeRay's validation accepts: durations, integers and versions.

KubeRay reads ``ray.io/initializing-timeout`` with Go's ``time.ParseDuration`` (then
``strconv.Atoi``), prints durations with ``time.Duration.String`` and compares Ray versions
with apimachinery's ``version.ParseGeneric``. These functions accept exactly what those accept
and format exactly as they print, so rayop refuses and reports the same values.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "MAX_DURATION_NS",
    "format_duration",
    "go_atoi",
    "parse_duration",
    "parse_generic_version",
    "version_less",
]

MAX_DURATION_NS: Final = (1 << 63) - 1
"""The largest ``time.Duration`` (nanoseconds in an int64)."""

_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_COMPONENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_ATOI = re.compile(r"[+-]?[0-9]+")
_VERSION = re.compile(r"\s*v?([0-9]+(?:\.[0-9]+)*)(.*)")


def parse_duration(text: str) -> int | None:
    """Returns the nanoseconds of a Go duration string (``"5m"``, ``"1h30m"``, ``"-1.5s"``),
    or None where ``time.ParseDuration`` fails (no unit, unknown unit, overflow)."""
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        return None
    total = 0
    while rest:
        match = _COMPONENT.match(rest)
        if match is None:  # pragma: no cover - the pattern matches any prefix, even ""
            return None
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            return None  # no digits: "time: invalid duration"
        scale = _UNITS.get(unit)
        if scale is None:
            return None  # missing or unknown unit
        value = int(whole or "0") * scale
        if fraction:
            value += int(fraction) * scale // 10 ** len(fraction)
        total += value
        if total > 1 << 63:
            return None
        rest = rest[match.end() :]
    if total > MAX_DURATION_NS and not (negative and total == 1 << 63):
        return None
    return -total if negative else total


def _fraction(value: int, precision: int) -> str:
    """Prints ``value / 10**precision`` with the fraction's trailing zeros dropped."""
    whole, part = divmod(value, 10**precision)
    digits = f"{part:0{precision}d}".rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)


def format_duration(nanoseconds: int) -> str:
    """Returns a duration as Go's ``time.Duration.String`` prints it (``"5m0s"``, ``"1.5s"``)."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    u = abs(nanoseconds)
    if u < 1_000_000_000:
        if u < 1_000:
            return f"{sign}{u}ns"
        if u < 1_000_000:
            return f"{sign}{_fraction(u, 3)}\u00b5s"
        return f"{sign}{_fraction(u, 6)}ms"
    seconds = _fraction(u % 60_000_000_000, 9)
    minutes = u // 60_000_000_000
    if minutes == 0:
        return f"{sign}{seconds}s"
    hours, minutes = divmod(minutes, 60)
    if hours == 0:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{hours}h{minutes}m{seconds}s"


def go_atoi(text: str) -> int | None:
    """Returns the integer ``strconv.Atoi`` reads from ``text`` (an optional sign and decimal
    digits, within int64), or None where it fails."""
    if not _ATOI.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << 63) <= value < 1 << 63 else None


def parse_generic_version(text: str) -> tuple[tuple[int, ...] | None, str]:
    """Parses a version as ``version.ParseGeneric`` does: at least two dot-separated numbers,
    an optional leading ``v``, anything after them ignored.

    Returns:
        The numeric components and "", or None and ParseGeneric's error message.
    """
    match = _VERSION.fullmatch(text)
    if match is None:
        return None, f"could not parse {_go_quote(text)} as version"
    components = match.group(1).split(".")
    if len(components) < 2:
        return None, f"illegal version string {_go_quote(text)}"
    if components[0].startswith("0") and components[0] != "0":
        return None, (
            f"illegal zero-prefixed version component {_go_quote(components[0])} "
            f"in {_go_quote(text)}"
        )
    return tuple(int(c) for c in components), ""


def version_less(version: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    """Tells whether ``version`` sorts before ``minimum`` (missing components count as 0)."""
    width = max(len(version), len(minimum))
    padded = version + (0,) * (width - len(version))
    return padded < minimum + (0,) * (width - len(minimum))


def _go_quote(text: str) -> str:
    """Quotes a string as Go's ``%q`` does for printable text."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'
