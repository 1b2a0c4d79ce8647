"""CRD validation rules (``x-kubernetes-validations``, CEL) evaluated as kube-apiserver does.

Each rule runs at its schema node with ``self`` bound to the value there (skipped where the
value is absent or null). A rule that names ``oldSelf`` is a transition rule: it runs only on an
update where the old object has a value at the same place (map keys correlate; list items only
in ``x-kubernetes-list-type: map`` lists, by their keys), unless ``optionalOldSelf`` makes
``oldSelf`` an optional. On update, a failing rule that does not use ``oldSelf`` is forgiven
where the value did not change (CRD validation ratcheting, on by default since Kubernetes 1.30).

A failure is a field error at the node's path (plus the rule's ``fieldPath``) that shows the
value when it is a scalar (not an object or array) and the rule's message, ``messageExpression``
or ``failed rule: <rule>`` as the detail; ``reason`` picks the error type. An error in a rule
(compilation, evaluation, cost) shows the schema type as the value. The wording follows
apiextensions-apiserver's ``pkg/apiserver/schema/cel/validation.go`` (checked against
kube-apiserver v1.37 by ``tests/real/test_cel_quota_differential.py``):
https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go

Rules are compiled once per schema (a CRD version) with the ``common-expression-language``
package; the Kubernetes functions it lacks come from :mod:`cel_library`; the cost bound is
:mod:`cel_cost`'s. Not supported: ``allOf``/``anyOf``/``oneOf`` nodes' rules, the warnings
kube-apiserver sends for ratcheted failures, compile-time type checking (a rule that is not a
boolean expression fails when it runs, not when the CRD is created).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import cel
import orjson

from rayop.sim.admission.cel_cost import (
    PER_CALL_LIMIT,
    RUNTIME_BUDGET,
    RuleShape,
    estimate,
    shape_of,
)
from rayop.sim.admission.cel_library import FUNCTIONS

__all__ = ["RuleNode", "check_rules", "rule_tree"]

Cause = tuple[str, str, str]
"""(field, cause type, message) as :func:`rayop.sim.machinery.errors.invalid` takes them."""

_OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
_MAX_MESSAGE_BYTES = 5 * 1024


@dataclass(frozen=True)
class Rule:
    """One compiled rule.

    Attributes:
        source: The CEL expression.
        program: Its compiled program (None when it did not compile).
        compile_error: Why it did not compile ("" when it did).
        uses_old_self: It is a transition rule.
        optional_old_self: ``optionalOldSelf``: it also runs without an old value.
        text: The rule's message, else its source (kube-apiserver's ruleErrorString).
        message: What a failure says without a messageExpression.
        message_program: The compiled messageExpression, if any.
        field_path: The normalized ``fieldPath`` appended to the node's path ("" for none).
        reason: The ``reason`` (FieldValueInvalid when unset).
        shape: What its cost depends on.
        functions: The Kubernetes library functions it (or its messageExpression) calls.
    """

    source: str
    program: cel.Program | None
    compile_error: str
    uses_old_self: bool
    optional_old_self: bool
    text: str
    message: str
    message_program: cel.Program | None
    field_path: str
    reason: str
    shape: RuleShape
    functions: dict[str, Callable[..., Any]]


@dataclass
class RuleNode:
    """A schema node that has rules, or leads to one that has.

    Attributes:
        type: The node's schema type (the value of its field errors).
        rules: Its own rules.
        properties: Children (by property name) that lead to rules.
        additional: The additionalProperties child, if it leads to rules.
        items: The array items child, if it leads to rules.
        list_keys: The map keys of an ``x-kubernetes-list-type: map`` list (items correlate).
    """

    type: str
    rules: tuple[Rule, ...] = ()
    properties: dict[str, RuleNode] = field(default_factory=dict)
    additional: RuleNode | None = None
    items: RuleNode | None = None
    list_keys: tuple[str, ...] = ()


_trees: dict[int, tuple[Mapping[str, Any], RuleNode | None]] = {}


def rule_tree(schema: Mapping[str, Any]) -> RuleNode | None:
    """Returns the compiled rules of a CRD version's schema (None: it has none); cached."""
    cached = _trees.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, _build(schema, root=True))
        _trees[id(schema)] = cached
    return cached[1]


def _build(schema: Mapping[str, Any], *, root: bool = False) -> RuleNode | None:
    node = RuleNode(type=str(schema.get("type", "object" if root else "")))
    raw_rules = schema.get("x-kubernetes-validations") or ()
    node.rules = tuple(_compile(r, schema) for r in raw_rules if isinstance(r, Mapping))
    for name, sub in (schema.get("properties") or {}).items():
        child = _build(sub) if isinstance(sub, Mapping) else None
        if child is not None:
            node.properties[name] = child
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        node.additional = _build(additional)
    items = schema.get("items")
    if isinstance(items, Mapping):
        node.items = _build(items)
        if schema.get("x-kubernetes-list-type") == "map":
            node.list_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    leads = node.rules or node.properties or node.additional or node.items
    return node if leads else None


def _compile(raw: Mapping[str, Any], schema: Mapping[str, Any]) -> Rule:
    source = str(raw.get("rule", ""))
    program, error = _program(source)
    message = str(raw.get("message") or "").strip()
    text = message or source.strip()
    expression = str(raw.get("messageExpression") or "")
    message_program = _program(expression)[0] if expression else None
    return Rule(
        source=source,
        program=program,
        compile_error=error,
        uses_old_self=program is not None and "oldSelf" in program.variables(),
        optional_old_self=bool(raw.get("optionalOldSelf")),
        text=text,
        message=message or f"failed rule: {text}",
        message_program=message_program,
        field_path=_normalized_field_path(str(raw.get("fieldPath") or ""), schema),
        reason=str(raw.get("reason") or "FieldValueInvalid"),
        shape=shape_of(source),
        functions=_library_functions(program, message_program),
    )


def _library_functions(*programs: cel.Program | None) -> dict[str, Callable[..., Any]]:
    """The library functions the programs call (registering all of them costs every call)."""
    names = {name for p in programs if p is not None for name in p.functions()}
    return {name: FUNCTIONS[name] for name in sorted(names) if name in FUNCTIONS}


def _program(source: str) -> tuple[cel.Program | None, str]:
    try:
        return cel.compile(source), ""
    except Exception as exc:  # the library raises ValueError (syntax) and RuntimeError
        said = str(exc)
        return None, "compilation failed: " + said[
            said.find("ERROR:") :
        ] if "ERROR:" in said else said


_SEGMENT = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]")


def _normalized_field_path(path: str, schema: Mapping[str, Any]) -> str:
    """``.spec.a['b.c']`` -> ``spec.a[b.c]`` (a property is a child, a map key a ``[key]``)."""
    out = ""
    node: Mapping[str, Any] = schema
    for m in _SEGMENT.finditer(path):
        name = m.group(1) if m.group(1) is not None else m.group(2).replace("\\'", "'")
        props = node.get("properties")
        if isinstance(props, Mapping) and name in props:
            out += f".{name}" if out else name
            node = props[name]
        else:
            out += f"[{name}]"
            extra = node.get("additionalProperties")
            node = extra if isinstance(extra, Mapping) else {}
    return out


# ---------------------------------------------------------------------------------- evaluation
@dataclass
class _Run:
    """One object's evaluation: its remaining budget and its causes."""

    budget: int = RUNTIME_BUDGET
    causes: list[Cause] = field(default_factory=list)
    stopped: bool = False


def check_rules(schema: Mapping[str, Any], obj: Any, old: Any | None) -> list[Cause]:
    """Evaluates every rule of ``schema`` on ``obj`` (``old``: the stored object on update).

    Returns:
        The failures, in kube-apiserver's field-error form (empty: all rules hold).
    """
    tree = rule_tree(schema)
    if tree is None:
        return []
    run = _Run()
    _visit(run, tree, "", obj, old, (obj, old))
    return run.causes


Correlated = tuple[Any, Any]
"""(new, old) at the nearest place correlated with the old object; old is None on create."""


def _unchanged(correlated: Correlated) -> bool:
    """Whether failures there are forgiven (ratcheting): the value is as it was."""
    new, old = correlated
    return old is not None and bool(new == old)


def _visit(
    run: _Run, node: RuleNode, path: str, value: Any, old: Any, correlated: Correlated
) -> None:
    """Runs ``node``'s rules on value, then its children's.

    ``correlated``: the nearest place correlated with the old object (failures of rules without
    oldSelf are forgiven where it did not change: ratcheting); compared only on a failure.
    """
    if value is None or run.stopped:
        return
    for rule in node.rules:
        _evaluate(run, node, rule, path, value, old, correlated)
        if run.stopped:
            return
    for key, child, sub_value, sub_old in _children(node, value, old):
        sub_path = _child_path(path, key)
        nearest = (sub_value, sub_old) if sub_old is not None else correlated
        _visit(run, child, sub_path, sub_value, sub_old, nearest)
        if run.stopped:
            return


def _children(
    node: RuleNode, value: Any, old: Any
) -> Iterator[tuple[str | int, RuleNode, Any, Any]]:
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for key, sub in value.items():
            child = node.properties.get(key) or (
                None if key in node.properties else node.additional
            )
            if child is None:
                continue
            yield (key if key in node.properties else f"[{key}]"), child, sub, old_map.get(key)
    elif isinstance(value, list) and node.items is not None:
        old_items = _keyed(node.list_keys, old) if node.list_keys else {}
        for i, item in enumerate(value):
            sub_old = old_items.get(_key_of(node.list_keys, item)) if node.list_keys else None
            yield i, node.items, item, sub_old


def _key_of(keys: tuple[str, ...], item: Any) -> tuple[Any, ...]:
    return tuple(repr(item.get(k)) for k in keys) if isinstance(item, dict) else (repr(item),)


def _keyed(keys: tuple[str, ...], old: Any) -> dict[tuple[Any, ...], Any]:
    return {_key_of(keys, item): item for item in old} if isinstance(old, list) else {}


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.startswith("["):
        return f"{path}{key}"
    return f"{path}.{key}" if path else key


def _evaluate(
    run: _Run,
    node: RuleNode,
    rule: Rule,
    path: str,
    value: Any,
    old: Any,
    correlated: Correlated,
) -> None:
    here = path or "<nil>"
    if rule.program is None:
        run.causes.append(_invalid(here, node.type, f"rule compile error: {rule.compile_error}"))
        return
    if rule.uses_old_self and old is None and not rule.optional_old_self:
        return
    cost = estimate(rule.shape, value, old)
    if cost > PER_CALL_LIMIT:
        said = "operation cancelled: actual cost limit exceeded"
        detail = f"'{said}': no further validation rules will be run due to call cost exceeds limit for rule: {rule.text}"
        run.causes.append(_invalid(here, node.type, detail))
        run.stopped = True
        return
    if cost > run.budget:
        run.causes.append(_invalid(here, node.type, _OUT_OF_BUDGET))
        run.stopped = True
        return
    run.budget -= cost
    variables = {"self": value}
    if rule.optional_old_self:
        variables["oldSelf"] = (
            cel.OptionalValue.none() if old is None else cel.OptionalValue.of(old)
        )
    elif old is not None:
        variables["oldSelf"] = old
    context = cel.Context(variables, rule.functions or None)
    try:
        result = rule.program.execute(context)
    except Exception as exc:  # the library raises KeyError, IndexError, TypeError, ValueError...
        run.causes.append(_invalid(here, node.type, _evaluation_error(exc, rule)))
        return
    if result is True:
        return
    if result is not False:
        detail = f"rule compile error: rule must evaluate to a bool, got {type(result).__name__}"
        run.causes.append(_invalid(here, node.type, detail))
        return
    if not rule.uses_old_self and _unchanged(correlated):
        return  # ratcheted: the value is as it was
    where = here
    if rule.field_path:
        where = f"{path}.{rule.field_path}" if path else rule.field_path
    detail = _message(rule, context)
    run.causes.append(_field_error(where, _shown(node.type, value), detail, rule.reason))


def _message(rule: Rule, context: cel.Context) -> str:
    """The failure's detail: the messageExpression's string when it yields a usable one."""
    if rule.message_program is None:
        return rule.message
    try:
        said = rule.message_program.execute(context)
    except Exception:  # kube-apiserver logs it and falls back to the message
        return rule.message
    if not isinstance(said, str):
        return rule.message
    said = said.strip()
    usable = said and "\n" not in said and len(said.encode()) <= _MAX_MESSAGE_BYTES
    return said if usable else rule.message


def _evaluation_error(exc: Exception, rule: Rule) -> str:
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else ''} evaluating rule: {rule.text}"
    if isinstance(exc, TypeError):
        return (
            f"'no such overload': call arguments did not match a supported operator, function "
            f"or macro signature for rule: {rule.text}"
        )
    said = str(exc).removesuffix(" in CEL expression")
    return f"{said} evaluating rule: {rule.text}"


def _invalid(path: str, type_name: str, detail: str) -> Cause:
    return path, "FieldValueInvalid", f'Invalid value: "{type_name}": {detail}'


def _shown(type_name: str, value: Any) -> str | None:
    """How a failed rule's field error shows the value: scalars as Go's field errors print them
    (strings quoted), objects and arrays not at all (None)."""
    if type_name in ("object", "array") or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return orjson.dumps(value).decode()


def _field_error(path: str, shown: str | None, detail: str, reason: str) -> Cause:
    if reason == "FieldValueForbidden":
        return path, reason, f"Forbidden: {detail}"
    if reason == "FieldValueRequired":
        return path, reason, f"Required value: {detail}"
    if reason == "FieldValueDuplicate":
        return path, reason, "Duplicate value" if shown is None else f"Duplicate value: {shown}"
    said = "Invalid value" if shown is None else f"Invalid value: {shown}"
    return path, "FieldValueInvalid", f"{said}: {detail}"
