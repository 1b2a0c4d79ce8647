"""Field selectors: parsing the query-string form and matching objects.

Field selectors accept ``path=v``, ``path==v`` and ``path!=v`` (comma-separated) where ``path``
is a dotted path into the object (``metadata.name``, ``status.phase``...). Label selectors are
:mod:`rayop.apimachinery.labels`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rayop.apimachinery.labels import SelectorError, split_requirements

__all__ = ["FieldSelector", "field_value", "parse_field_selector"]


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
    for part in split_requirements(text):
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
