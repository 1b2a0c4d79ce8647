"""Admission of custom resources against their CRD schema: pruning, defaulting, validation.

Follows the apiextensions-apiserver order: unknown fields are pruned (unless the schema says
``x-kubernetes-preserve-unknown-fields``) and reported as the request's ``fieldValidation``
asks (``field_validation.py``: Strict refuses them), nulls where the schema is not nullable are
dropped (or replaced by the default), schema defaults are applied, then the object is
validated (jsonschema does the checking) and its CEL rules evaluated (``cel_rules``); failures
become 422 Invalid with field paths and kube-apiserver's messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import orjson

from rayop.apimachinery.objects import Obj
from rayop.sim.admission.cel_rules import check_rules
from rayop.sim.admission.field_validation import report_unknown
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo

__all__ = ["admit_custom", "apply_defaults", "prune", "validate_crd", "validate_custom"]

_validators: dict[int, tuple[Mapping[str, Any], jsonschema.protocols.Validator]] = {}


def prune(
    value: Any,
    schema: Mapping[str, Any] | None,
    *,
    root: bool = False,
    removed: list[str] | None = None,
    path: str = "",
) -> Any:
    """Removes fields the structural ``schema`` does not declare (in place); returns value.

    Args:
        value: the object (or a part of it).
        schema: its structural schema.
        root: ``value`` is a whole object (apiVersion, kind and metadata are kept).
        removed: collects the path of every removed field (``spec.items[0].x``).
        path: the path of ``value`` (for ``removed``).
    """
    if schema is None or schema.get("x-kubernetes-int-or-string"):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        embedded = schema.get("x-kubernetes-embedded-resource", False)
        keep = {"apiVersion", "kind", "metadata"} if (root or embedded) else set()
        for key in list(value):
            if key in keep:
                continue
            where = f"{path}.{key}" if path else key
            if props is not None and key in props:
                prune(value[key], props[key], removed=removed, path=where)
            elif isinstance(additional, Mapping):
                prune(value[key], additional, removed=removed, path=where)
            elif not (additional is True or preserve):
                del value[key]
                if removed is not None:
                    removed.append(where)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                prune(item, items, removed=removed, path=f"{path}[{i}]")
    return value


def apply_defaults(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Fills in schema ``default`` values of absent properties (in place); returns value."""
    if schema is None:
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key in value and value[key] is None and not sub.get("nullable"):
                del value[key]  # kube-apiserver prunes non-nullable nulls, then defaults
            if key not in value and isinstance(sub, Mapping) and "default" in sub:
                value[key] = orjson.loads(orjson.dumps(sub["default"]))
            if key in value:
                apply_defaults(value[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for key in value:
                if key not in props:
                    apply_defaults(value[key], additional)
    elif isinstance(value, list):
        _each_item(value, schema, apply_defaults)
    return value


def _each_item(
    value: list[Any], schema: Mapping[str, Any], visit: Callable[[Any, Mapping[str, Any]], Any]
) -> None:
    """Visits every item of an array with the array schema's ``items`` schema (if any)."""
    items = schema.get("items")
    if isinstance(items, Mapping):
        for item in value:
            visit(item, items)


def _to_jsonschema(schema: Any) -> Any:
    """Converts OpenAPI v3 ``nullable`` and int-or-string into JSON Schema type unions
    (recursively)."""
    if isinstance(schema, list):
        return [_to_jsonschema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: _to_jsonschema(v) for k, v in schema.items() if k != "default"}
    if schema.get("nullable") and "type" in out:
        t = out["type"]
        out["type"] = [*t, "null"] if isinstance(t, list) else [t, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if schema.get("x-kubernetes-int-or-string") and "type" not in out:
        if out.get("anyOf") == _INT_OR_STRING:
            del out["anyOf"]  # the same check as a type union, several times cheaper
        if "anyOf" not in out:
            out["type"] = ["integer", "string"]
    return out


_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def _validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    cached = _validators.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    validator = jsonschema.Draft4Validator(_to_jsonschema(schema))
    _validators[id(schema)] = (schema, validator)
    return validator


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _cause(err: jsonschema.ValidationError) -> tuple[str, str, str]:
    path = _path(err.absolute_path)
    v = err.validator
    inst = orjson.dumps(err.instance).decode() if not isinstance(err.instance, dict | list) else ""
    if v == "required":
        missing = str(err.message).split("'")[1] if "'" in str(err.message) else ""
        field = f"{path}.{missing}" if path else missing
        return field, "FieldValueRequired", "Required value"
    if v == "enum":
        choices: Any = err.validator_value
        allowed = ", ".join(orjson.dumps(x).decode() for x in choices)
        return (
            path,
            "FieldValueNotSupported",
            f"Unsupported value: {inst}: supported values: {allowed}",
        )
    if v == "type":
        want: Any = err.validator_value
        want_s = want if isinstance(want, str) else want[0]
        shown = f'"{_json_type(err.instance)}"'
        return (
            path,
            "FieldValueTypeInvalid",
            (f"Invalid value: {shown}: {path} in body must be of type {want_s}: {shown}"),
        )
    bound: Any = err.validator_value
    if v == "pattern":
        return (
            path,
            "FieldValueInvalid",
            f"Invalid value: {inst}: {path} in body should match '{bound}'",
        )
    if v == "maxLength":
        return path, "FieldValueTooLong", f"Too long: may not be more than {bound} bytes"
    if v == "maxItems":
        return (
            path,
            "FieldValueTooMany",
            f"Too many: {len(err.instance) if isinstance(err.instance, list) else 0}: "
            f"must have at most {bound} items",
        )
    if v in _BOUNDS:
        said = _BOUNDS[v].format(bound)
        return path, "FieldValueInvalid", f"Invalid value: {inst}: {path} in body {said}"
    return path, "FieldValueInvalid", f"Invalid value: {inst or 'value'}: {err.message}"


_BOUNDS = {
    "minimum": "should be greater than or equal to {}",
    "maximum": "should be less than or equal to {}",
    "minLength": "should be at least {} chars long",
    "minItems": "should have at least {} items",
}


def _json_type(value: Any) -> str:
    """Returns the JSON type name kube-apiserver shows for a mistyped value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def validate_custom(info: ResourceInfo, obj: Obj, old: Obj | None = None) -> None:
    """Validates a custom object against its schema, then its CEL rules (``cel_rules``).

    Args:
        info: the custom resource's version.
        obj: the object to admit.
        old: the stored object on update (transition rules and ratcheting need it).

    Raises:
        StatusError: 422 Invalid listing each failing field.
    """
    if info.schema is None:
        return
    errors = sorted(_validator(info.schema).iter_errors(obj), key=lambda e: list(e.absolute_path))
    causes = [_cause(e) for e in errors[:20]]
    if any(reason in _BLOCKING for _, reason, _ in causes):
        if _has_rules(info.schema):  # then kube-apiserver skips the CEL rules
            causes.append(("<nil>", "FieldValueInvalid", _RULES_SKIPPED))
    else:
        causes.extend(check_rules(info.schema, obj, old))
    if causes:
        name = (obj.get("metadata") or {}).get("name", "")
        raise se.invalid(info.kind, info.group, name, causes)


_BLOCKING = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTypeInvalid"})
"""The errors after which kube-apiserver does not evaluate a CRD's CEL rules."""
_RULES_SKIPPED = (
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)


def _has_rules(schema: Any) -> bool:
    """Whether any node of the schema has ``x-kubernetes-validations`` (CEL rules)."""
    found = _rules_found.get(id(schema))
    if found is None or found[0] is not schema:
        found = (schema, "x-kubernetes-validations" in orjson.dumps(schema).decode())
        _rules_found[id(schema)] = found
    return found[1]


_rules_found: dict[int, tuple[Any, bool]] = {}


def admit_custom(info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
    """Prunes, defaults and validates a custom object in place (create, update and /status).

    Raises:
        StatusError: 422 Invalid.
    """
    if info.schema is None:
        return
    schema = info.schema
    removed: list[str] = []
    prune(obj, schema, root=True, removed=removed)
    report_unknown(info.kind, info.version, removed)
    apply_defaults(obj, schema)
    validate_custom(info, obj, old)


def validate_crd(crd: Obj) -> None:
    """Checks the parts of a CRD the server relies on (names, versions, storage).

    Raises:
        StatusError: 422 Invalid.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = (crd.get("metadata") or {}).get("name", "")
    causes: list[tuple[str, str, str]] = []
    group = spec.get("group", "")
    if not group:
        causes.append(("spec.group", "FieldValueRequired", "Required value"))
    if not names.get("plural"):
        causes.append(("spec.names.plural", "FieldValueRequired", "Required value"))
    if not names.get("kind"):
        causes.append(("spec.names.kind", "FieldValueRequired", "Required value"))
    if name and names.get("plural") and group and name != f"{names['plural']}.{group}":
        causes.append(
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
            )
        )
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            (
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    if spec.get("scope", "Namespaced") not in ("Namespaced", "Cluster"):
        causes.append(
            (
                "spec.scope",
                "FieldValueNotSupported",
                'Unsupported value: supported values: "Cluster", "Namespaced"',
            )
        )
    if causes:
        raise se.invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, causes)
