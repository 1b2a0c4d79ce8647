"""The part of Kubernetes' CEL libraries that CRD rules get beside standard CEL: string and list
functions, called as methods (``self.lowerAscii()``, ``self.split(',')``, ``self.isSorted()``).

Semantics follow https://kubernetes.io/docs/reference/using-api/cel/ (the strings extension
of cel-go, https://pkg.go.dev/github.com/google/cel-go/ext#Strings, and Kubernetes' list
library). Not provided: ``quantity``, ``url``, ``ip``/``cidr``, ``format``, ``regex.find``,
``authorizer`` and the ``sets`` extension; a rule that calls one fails with an evaluation error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

__all__ = ["FUNCTIONS"]


def _string(value: Any, function: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"no such overload: {function}")
    return value


def _index_of(target: Any, what: Any, start: int = 0) -> int:
    if isinstance(target, list):
        return next((i for i, item in enumerate(target) if item == what), -1)
    return _string(target, "indexOf").find(_string(what, "indexOf"), start)


def _last_index_of(target: Any, what: Any, end: int | None = None) -> int:
    if isinstance(target, list):
        found = [i for i, item in enumerate(target) if item == what]
        return found[-1] if found else -1
    text = _string(target, "lastIndexOf")
    return text.rfind(_string(what, "lastIndexOf"), 0, None if end is None else end + len(what))


def _split(text: Any, separator: str, limit: int = -1) -> list[str]:
    value = _string(text, "split")
    if limit == 0:
        return []
    return value.split(separator, limit - 1 if limit > 0 else -1)


def _replace(text: Any, old: str, new: str, limit: int = -1) -> str:
    return _string(text, "replace").replace(old, new, limit)


def _substring(text: Any, start: int, end: int | None = None) -> str:
    value = _string(text, "substring")
    stop = len(value) if end is None else end
    if not 0 <= start <= stop <= len(value):
        raise IndexError(f"index out of range: {start if start > len(value) else stop}")
    return value[start:stop]


def _char_at(text: Any, index: int) -> str:
    value = _string(text, "charAt")
    if not 0 <= index <= len(value):
        raise IndexError(f"index out of range: {index}")
    return value[index : index + 1]


def _join(items: Any, separator: str = "") -> str:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise TypeError("no such overload: join")
    return separator.join(items)


def _list(value: Any, function: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"no such overload: {function}")
    return value


def _is_sorted(items: Any) -> bool:
    values = _list(items, "isSorted")
    return all(a <= b for a, b in itertools.pairwise(values))


def _sum(items: Any) -> Any:
    return sum(_list(items, "sum"))


def _min(items: Any) -> Any:
    values = _list(items, "min")
    if not values:
        raise ValueError("min(list) argument must not be empty")
    return min(values)


def _max(items: Any) -> Any:
    values = _list(items, "max")
    if not values:
        raise ValueError("max(list) argument must not be empty")
    return max(values)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": lambda s: "".join(
        c.lower() if c.isascii() else c for c in _string(s, "lowerAscii")
    ),
    "upperAscii": lambda s: "".join(
        c.upper() if c.isascii() else c for c in _string(s, "upperAscii")
    ),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": lambda s: _string(s, "trim").strip(),
    "join": _join,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _min,
    "max": _max,
}
"""Function name -> implementation, registered on every rule's evaluation context."""
