"""Kubernetes label selectors: parsing the string form and matching labels against it.

Supported requirements: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``
(exists) and ``!k`` (does not exist), joined by commas.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a selector: ``key`` ``op`` ``values``."""

    key: str
    op: str
    """One of "in", "notin", "exists", "!"."""
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Tells whether ``labels`` satisfy this requirement."""
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op == "in":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Tells whether ``labels`` satisfy every requirement."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _parse_requirement(part: str) -> Requirement:
    eq = _EQ_RE.match(part)
    if eq:
        key, op, value = eq.groups()
        return Requirement(key, "notin" if op == "!=" else "in", frozenset([value]))
    st = _SET_RE.match(part)
    if not st:
        raise ValueError(f"invalid label selector requirement: {part!r}")
    bang, key, op, values = st.groups()
    if op:
        if bang:
            raise ValueError(f"invalid label selector requirement: {part!r}")
        return Requirement(key, op, frozenset(v.strip() for v in values.split(",") if v.strip()))
    return Requirement(key, "!" if bang else "exists")


def parse_selector(selector: str | Mapping[str, str] | LabelSelector | None) -> LabelSelector:
    """Parses a selector string (or a ``matchLabels``-style mapping) into a LabelSelector.

    Raises:
        ValueError: the string is not a valid selector.
    """
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, Mapping):
        return LabelSelector(
            tuple(Requirement(k, "in", frozenset([v])) for k, v in sorted(selector.items()))
        )
    return LabelSelector(tuple(_parse_requirement(p) for p in _split_top_level(selector)))


def format_selector(selector: str | Mapping[str, str] | None) -> str | None:
    """Returns the string form of a selector given as a string or mapping (None stays None)."""
    if selector is None or isinstance(selector, str):
        return selector
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
