"""The cost bound of CRD rules: how much evaluating one rule on one value may cost, worked out
before it runs.

kube-apiserver meters each rule as it runs (cel-go's runtime cost) and stops at a per-call limit
of 1,000,000 and a budget of 10,000,000 for all the rules of one object
(``k8s.io/apiserver/pkg/apis/cel/config.go``:
https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiserver/pkg/apis/cel/config.go).
The CEL library used here evaluates in native code that cannot be metered nor stopped, so the
cost is bounded up front instead: a rule's tokens, times the largest collection in the value
for each level of comprehension nesting (``all``, ``exists``, ``exists_one``, ``map``,
``filter``), plus a tenth of the value's string characters when the rule calls a string function.
This is an upper bound (a short-circuiting ``exists`` is charged in full), close to
kube-apiserver's for the loops that dominate it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["PER_CALL_LIMIT", "RUNTIME_BUDGET", "RuleShape", "estimate", "shape_of"]

PER_CALL_LIMIT = 1_000_000
"""kube-apiserver's PerCallLimit: the most one rule may cost on one value."""
RUNTIME_BUDGET = 10_000_000
"""kube-apiserver's RuntimeCELCostBudget: the most all rules of one object may cost."""

_TOKEN = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\w+|[^\s\w]")
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_STRING_FUNCTIONS = frozenset(
    {
        "matches",
        "contains",
        "startsWith",
        "endsWith",
        "split",
        "replace",
        "lowerAscii",
        "upperAscii",
        "trim",
        "indexOf",
        "lastIndexOf",
        "substring",
        "join",
    }
)


@dataclass(frozen=True)
class RuleShape:
    """What a rule's cost depends on.

    Attributes:
        tokens: Its number of tokens (each evaluated at least once).
        loop_depth: The deepest nesting of comprehension macros.
        string_work: It calls a function whose cost grows with string length.
    """

    tokens: int
    loop_depth: int
    string_work: bool


def shape_of(source: str) -> RuleShape:
    """Scans a rule's source for its cost shape (string literals are skipped)."""
    tokens = _TOKEN.findall(source)
    depth = deepest = 0
    open_loops: list[int] = []  # paren depth at which each open macro call started
    parens = 0
    string_work = False
    for i, tok in enumerate(tokens):
        if tok == "(":
            parens += 1
            follows_dot = i >= 2 and tokens[i - 2] == "."
            if follows_dot and tokens[i - 1] in _MACROS:
                open_loops.append(parens)
                depth = len(open_loops)
                deepest = max(deepest, depth)
        elif tok == ")":
            if open_loops and open_loops[-1] == parens:
                open_loops.pop()
            parens -= 1
        elif tok in _STRING_FUNCTIONS:
            string_work = True
    return RuleShape(tokens=len(tokens), loop_depth=deepest, string_work=string_work)


def estimate(shape: RuleShape, *values: Any) -> int:
    """Returns the cost bound of a rule of ``shape`` evaluated on ``values`` (self, oldSelf)."""
    if not shape.loop_depth and not shape.string_work:
        return shape.tokens
    widest, chars = 1, 0
    for value in values:
        w, c = _measure(value)
        widest, chars = max(widest, w), chars + c
    cost: int = shape.tokens * pow(widest, shape.loop_depth)
    if shape.string_work:
        cost += chars // 10
    return cost


def _measure(value: Any) -> tuple[int, int]:
    """Returns (the largest collection's size, the number of string characters) in value."""
    widest, chars = 1, 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            widest = max(widest, len(item))
            stack.extend(item.values())
            chars += sum(len(k) for k in item)
        elif isinstance(item, list):
            widest = max(widest, len(item))
            stack.extend(item)
    return widest, chars
