"""Admission of custom resources against their CRD schema: pruning, defaulting, validation.

Follows the apiextensions-apiserver order: unknown fields are pruned (unless the schema says
``x-kubernetes-preserve-unknown-fields``), then schema defaults are applied, then the object is
validated (jsonschema does the checking); failures become 422 Invalid with field paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import orjson

from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo

__all__ = ["admit_custom", "apply_defaults", "prune", "validate_crd", "validate_custom"]

Obj = dict[str, Any]
_validators: dict[int, tuple[Mapping[str, Any], jsonschema.protocols.Validator]] = {}


def prune(value: Any, schema: Mapping[str, Any] | None, *, root: bool = False) -> Any:
    """Removes fields the structural ``schema`` does not declare (in place); returns value."""
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
            if props is not None and key in props:
                prune(value[key], props[key])
            elif isinstance(additional, Mapping):
                prune(value[key], additional)
            elif not (additional is True or preserve):
                del value[key]
    elif isinstance(value, list):
        _each_item(value, schema, prune)
    return value


def apply_defaults(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Fills in schema ``default`` values of absent properties (in place); returns value."""
    if schema is None:
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
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
    """Converts OpenAPI v3 ``nullable`` into JSON Schema type unions (recursively)."""
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
    if schema.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["type"] = ["integer", "string"]
    return out


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
        shown = inst or ('"object"' if isinstance(err.instance, dict) else '"array"')
        return (
            path,
            "FieldValueTypeInvalid",
            (f"Invalid value: {shown}: {path} in body must be of type {want_s}: {shown}"),
        )
    return path, "FieldValueInvalid", f"Invalid value: {inst or 'value'}: {err.message}"


def validate_custom(info: ResourceInfo, obj: Obj) -> None:
    """Validates a custom object against its schema.

    Raises:
        StatusError: 422 Invalid listing each failing field.
    """
    if info.schema is None:
        return
    errors = sorted(_validator(info.schema).iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        name = (obj.get("metadata") or {}).get("name", "")
        raise se.invalid(info.kind, info.group, name, [_cause(e) for e in errors[:20]])


def admit_custom(info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
    """Prunes, defaults and validates a custom object in place (create, update and /status).

    Raises:
        StatusError: 422 Invalid.
    """
    if info.schema is None:
        return
    schema = info.schema
    prune(obj, schema, root=True)
    apply_defaults(obj, schema)
    validate_custom(info, obj)


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
