"""OpenAPI v3 (structural) schemas for CRDs, generated from the pydantic models of this package.

The generator walks a model's fields and their Python types; it does not use pydantic's own JSON
schema output, because a CRD schema has rules of its own (no ``$ref``, no ``anyOf`` for optional
fields, ``x-kubernetes-*`` extensions). The mapping is:

- ``str``/``bool``/``int``/``float`` become ``string``/``boolean``/``integer``/``number``;
- a ``StrEnum`` becomes a ``string`` with ``enum`` (use plain ``str`` where KubeRay has no enum);
- ``X | None`` is ``X`` (optional fields are simply not listed as required);
- ``int | str`` is Kubernetes' int-or-string;
- ``list[X]`` is an ``array``; ``dict[str, X]`` an ``object`` with ``additionalProperties``;
- ``dict[str, Any]`` is an embedded Kubernetes object: where
  :data:`rayop.api.k8s_schemas.EMBEDDED` names its type (``Model.wireField``), that type's full
  schema; elsewhere it is kept as is (``x-kubernetes-preserve-unknown-fields: true``);
- a model is an ``object`` with its fields under their wire names (aliases), sorted.

A field's default becomes the schema default when it is not ``None``; a field without a default
is required. :class:`CrdField` markers, attached with ``typing.Annotated``, add keywords such as
``format``, ``minimum`` or ``x-kubernetes-validations`` and can force a defaulted field into
``required`` (as KubeRay does for ``minReplicas`` and ``maxReplicas``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from rayop.api.field_docs import field_docstring
from rayop.api.k8s_schemas import embedded_schema

__all__ = ["CrdField", "model_schema", "type_schema"]


class CrdField:
    """Extra openAPIV3Schema keywords for one type, attached with ``Annotated[T, CrdField(...)]``.

    Args:
        keywords: keywords merged into the generated schema of the annotated type, e.g.
            ``{"format": "int32"}`` or ``{"x-kubernetes-preserve-unknown-fields": True}``.
        required: list the field in its object's ``required`` even though it has a default.
    """

    __slots__ = ("keywords", "required")

    def __init__(self, keywords: Mapping[str, Any] | None = None, *, required: bool = False):
        self.keywords: dict[str, Any] = dict(keywords or {})
        self.required = required

    def __repr__(self) -> str:
        return f"CrdField({self.keywords!r}, required={self.required})"


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Returns the structural schema of ``model``: an object with its fields as properties.

    Args:
        model: a pydantic model class whose fields use the types listed in the module docstring.

    Returns:
        A new dict (the caller may modify it).

    Raises:
        TypeError: a field's type has no CRD schema equivalent.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        wire = field.alias or name
        prop = type_schema(field.annotation, field.metadata)
        prop = _embedded(model, wire, prop)
        description = field.description or field_docstring(model, name)
        if description:
            prop = {"description": description, **prop}
        if field.default is not PydanticUndefined and field.default is not None:
            prop["default"] = _plain(field.default)
        properties[wire] = prop
        if field.is_required() or any(m.required for m in _markers(field.metadata)):
            required.append(wire)
    schema: dict[str, Any] = {"type": "object", "properties": dict(sorted(properties.items()))}
    if required:
        schema["required"] = sorted(required)
    return schema


def _embedded(model: type[BaseModel], wire: str, prop: dict[str, Any]) -> dict[str, Any]:
    """Returns ``prop`` with its open object (or open items) replaced by the Kubernetes type.

    The type is looked up as ``Class.wireField`` for ``model`` and then its bases, so a field
    inherited from a base model gets the same schema.
    """
    for owner in model.__mro__:
        where = f"{owner.__name__}.{wire}"
        kubernetes = embedded_schema(where)
        if kubernetes is not None:
            return _embed(prop, kubernetes, where)
    return prop


def _embed(prop: dict[str, Any], kubernetes: dict[str, Any], where: str) -> dict[str, Any]:
    """Returns ``prop`` with its open object (or its open items) replaced by ``kubernetes``."""
    if _is_open(prop):
        return kubernetes
    if prop.get("type") == "array" and _is_open(prop.get("items") or {}):
        return {**prop, "items": kubernetes}
    raise TypeError(f"{where} is not an embedded object (dict[str, Any] or a list of them)")


def _is_open(schema: dict[str, Any]) -> bool:
    return schema == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def type_schema(tp: Any, metadata: typing.Sequence[Any] = ()) -> dict[str, Any]:
    """Returns the structural schema of one Python type (see the module docstring).

    Args:
        tp: the type, possibly ``Annotated`` with :class:`CrdField` markers.
        metadata: further markers that apply to ``tp`` (pydantic strips a field's outer
            ``Annotated`` into ``FieldInfo.metadata``).

    Raises:
        TypeError: ``tp`` has no CRD schema equivalent.
    """
    markers = list(_markers(metadata))
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        inner, *extra = typing.get_args(tp)
        return type_schema(inner, [*extra, *markers])
    schema = _bare_schema(tp, origin)
    for marker in markers:
        schema.update(marker.keywords)
    return schema


def _bare_schema(tp: Any, origin: Any) -> dict[str, Any]:
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return type_schema(members[0])
        if {_strip(m) for m in members} == {int, str}:
            return {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
        raise TypeError(f"no CRD schema for union {tp!r}")
    if origin is list:
        (item,) = typing.get_args(tp)
        return {"type": "array", "items": type_schema(item)}
    if origin is dict:
        key, value = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"CRD maps need string keys, not {tp!r}")
        if value is Any:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"type": "object", "additionalProperties": type_schema(value)}
    return _scalar_schema(tp)


def _scalar_schema(tp: Any) -> dict[str, Any]:
    if isinstance(tp, type):
        if issubclass(tp, BaseModel):
            return model_schema(tp)
        if issubclass(tp, Enum):
            return {"type": "string", "enum": [m.value for m in tp]}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
    raise TypeError(f"no CRD schema for {tp!r}")


def _strip(tp: Any) -> Any:
    """Returns ``tp`` without its ``Annotated`` wrapper."""
    if typing.get_origin(tp) is typing.Annotated:
        return typing.get_args(tp)[0]
    return tp


def _markers(metadata: typing.Iterable[Any]) -> typing.Iterator[CrdField]:
    return (m for m in metadata if isinstance(m, CrdField))


def _plain(value: Any) -> Any:
    """Returns a default as plain JSON data (enum members become their values)."""
    if isinstance(value, Enum):
        return value.value
    return value
