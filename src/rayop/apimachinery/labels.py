"""Kubernetes label selectors: the string form, ``metav1.LabelSelector``, and matching labels.

String grammar (as kube-apiserver accepts it): comma-separated requirements, each one of
``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists) and ``!k``
(does not exist). Keys and values are made of ``A-Z a-z 0-9 _ . -`` (keys also ``/``).
``k=v`` is stored as ``k in (v)`` and ``k!=v`` as ``k notin (v)``; ``!=`` and ``notin`` match
an object without the label, as in Kubernetes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "as_label_selector",
    "format_selector",
    "label_selector_from_dict",
    "parse_label_selector",
    "split_requirements",
]

Operator = Literal["in", "notin", "exists", "!exists"]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXPRESSION_OPERATORS: Mapping[str, Operator] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!exists",
}


class SelectorError(ValueError):
    """A selector that cannot be parsed."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a label selector: ``key`` ``op`` ``values``."""

    key: str
    op: Operator
    values: frozenset[str] = frozenset()
    """The values of ``in``/``notin`` (one for ``=``/``!=``); empty for the others."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Tells whether ``labels`` satisfy this requirement."""
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Tells whether ``labels`` (None: no labels) satisfy every requirement."""
        present = labels or {}
        return all(r.matches(present) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Tells whether ``obj`` (a Kubernetes object) is selected by its labels."""
        if not self.requirements:
            return True
        return self.matches(obj.get("metadata", {}).get("labels"))

    @property
    def empty(self) -> bool:
        """Whether the selector has no requirement (selects everything)."""
        return not self.requirements


def split_requirements(text: str) -> list[str]:
    """Splits a selector string on the commas outside parentheses (blank parts dropped)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (s.strip() for s in parts) if p]


def _parse_requirement(part: str) -> Requirement:
    eq = _EQ_RE.match(part)
    if eq:
        key, op, value = eq.groups()
        return Requirement(key, "notin" if op == "!=" else "in", frozenset((value,)))
    st = _SET_RE.match(part)
    if not st:
        raise SelectorError(f"unable to parse requirement: {part!r}")
    bang, key, op, values = st.groups()
    if not op:
        return Requirement(key, "!exists" if bang else "exists")
    if bang:
        raise SelectorError(f"unable to parse requirement: {part!r}")
    chosen = frozenset(v.strip() for v in values.split(",") if v.strip())
    return Requirement(key, "in" if op == "in" else "notin", chosen)


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parses a selector string (the ``labelSelector`` query value); None or empty: everything.

    Raises:
        SelectorError: the text is not a valid selector.
    """
    if not text:
        return LabelSelector()
    return LabelSelector(tuple(_parse_requirement(p) for p in split_requirements(text)))


def _equal(labels: Mapping[str, Any]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, "in", frozenset((str(v),))) for k, v in sorted(labels.items()))


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Builds a selector from a ``metav1.LabelSelector`` (``matchLabels``/``matchExpressions``).

    A plain ``{key: value}`` map (a Service's ``spec.selector``) is accepted too.

    Raises:
        SelectorError: an expression's operator is not one of Kubernetes'.
    """
    if not selector:
        return LabelSelector()
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        return LabelSelector(_equal(selector))
    requirements = list(_equal(selector.get("matchLabels") or {}))
    for expr in selector.get("matchExpressions") or []:
        op = _EXPRESSION_OPERATORS.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"unknown operator {expr.get('operator')!r}")
        requirements.append(Requirement(expr["key"], op, frozenset(expr.get("values") or ())))
    return LabelSelector(tuple(requirements))


def as_label_selector(selector: str | Mapping[str, str] | LabelSelector | None) -> LabelSelector:
    """Returns a selector given as a string, a ``{key: value}`` map or a parsed one.

    Raises:
        SelectorError: the string is not a valid selector.
    """
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, Mapping):
        return LabelSelector(_equal(selector))
    return parse_label_selector(selector)


def format_selector(selector: str | Mapping[str, str] | None) -> str | None:
    """Returns the string form of a selector given as a string or map (None stays None)."""
    if selector is None or isinstance(selector, str):
        return selector
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
