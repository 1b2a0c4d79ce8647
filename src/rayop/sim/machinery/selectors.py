"""Label and field selectors: parsing the query-string forms and matching objects.

Label selector grammar (as kube-apiserver accepts it): comma-separated requirements,
each one of ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists)
and ``!k`` (does not exist). Field selectors accept ``path=v``, ``path==v`` and ``path!=v``
where ``path`` is a dotted path into the object (``metadata.name``, ``status.phase``...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "SelectorError",
    "field_value",
    "label_selector_from_dict",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(ValueError):
    """Raised when a selector string cannot be parsed."""


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One requirement of a label selector.

    Attributes:
        key: The label key.
        op: One of ``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!exists``.
        values: The values for ``=``/``!=`` (one) and ``in``/``notin`` (several).
    """

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Returns whether ``labels`` satisfy this requirement."""
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!exists":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "in"):
            return value is not None and value in self.values
        # "!=" and "notin" match when the label is absent, as in Kubernetes.
        return value is None or value not in self.values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector; an empty one matches everything."""

    requirements: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Returns whether an object with ``labels`` is selected."""
        lab = labels or {}
        return all(r.matches(lab) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Returns whether ``obj`` (a Kubernetes object dict) is selected by its labels."""
        if not self.requirements:
            return True
        return self.matches(obj.get("metadata", {}).get("labels"))

    @property
    def empty(self) -> bool:
        """Whether the selector has no requirement (selects everything)."""
        return not self.requirements


_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")


def _split_top_level(text: str) -> list[str]:
    """Splits on commas that are not inside parentheses."""
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


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parses a label selector string.

    Args:
        text: The ``labelSelector`` query value; None or empty selects everything.

    Returns:
        The parsed selector.

    Raises:
        SelectorError: The text is not a valid selector.
    """
    if not text:
        return LabelSelector()
    reqs: list[LabelRequirement] = []
    for part in _split_top_level(text):
        m = _EQ_RE.match(part)
        if m:
            key, op, value = m.groups()
            reqs.append(LabelRequirement(key, "!=" if op == "!=" else "=", frozenset((value,))))
            continue
        m = _SET_RE.match(part)
        if not m:
            raise SelectorError(f"unable to parse requirement: {part!r}")
        neg, key, setop, vals = m.groups()
        if setop:
            if neg:
                raise SelectorError(f"unable to parse requirement: {part!r}")
            values = frozenset(v.strip() for v in vals.split(",") if v.strip())
            reqs.append(LabelRequirement(key, setop, values))
        else:
            reqs.append(LabelRequirement(key, "!exists" if neg else "exists"))
    return LabelSelector(tuple(reqs))


def label_selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Builds a selector from a metav1.LabelSelector dict (matchLabels/matchExpressions).

    A plain ``{key: value}`` map (as in a Service's ``spec.selector``) is accepted too.
    """
    if not selector:
        return LabelSelector()
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        return LabelSelector(
            tuple(LabelRequirement(k, "=", frozenset((str(v),))) for k, v in selector.items())
        )
    reqs = [
        LabelRequirement(k, "=", frozenset((str(v),)))
        for k, v in (selector.get("matchLabels") or {}).items()
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        op = ops.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"unknown operator {expr.get('operator')!r}")
        reqs.append(LabelRequirement(expr["key"], op, frozenset(expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


def field_value(obj: Mapping[str, Any], path: str) -> str | None:
    """Returns the string value at a dotted ``path`` of ``obj``, or None when absent."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
        if cur is None:
            return None
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``path=value`` or ``path!=value`` requirement of a field selector."""

    path: str
    value: str
    negate: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Returns whether ``obj`` satisfies this requirement (a missing field is "")."""
        actual = field_value(obj, self.path) or ""
        return (actual != self.value) if self.negate else (actual == self.value)


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A parsed field selector; an empty one matches everything."""

    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Returns whether ``obj`` is selected."""
        return all(r.matches(obj) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """Whether the selector has no requirement."""
        return not self.requirements

    def exact_name(self) -> str | None:
        """Returns the name when the selector pins ``metadata.name=<name>``, else None."""
        for r in self.requirements:
            if r.path == "metadata.name" and not r.negate:
                return r.value
        return None


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parses a field selector string.

    Raises:
        SelectorError: The text is not a valid field selector.
    """
    if not text:
        return FieldSelector()
    reqs: list[FieldRequirement] = []
    for part in _split_top_level(text):
        if "!=" in part:
            path, _, value = part.partition("!=")
            negate = True
        elif "==" in part:
            path, _, value = part.partition("==")
            negate = False
        elif "=" in part:
            path, _, value = part.partition("=")
            negate = False
        else:
            raise SelectorError(f"invalid field selector: {part!r}")
        path = path.strip()
        if not path:
            raise SelectorError(f"invalid field selector: {part!r}")
        reqs.append(FieldRequirement(path, value.strip(), negate))
    return FieldSelector(tuple(reqs))
