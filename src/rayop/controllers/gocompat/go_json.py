"""Go ``encoding/json`` output of a typed Kubernetes struct, computed from its wire dict.

KubeRay hashes ``json.Marshal`` of a typed ``RayClusterSpec``; to get the same bytes from the
JSON the API server stores, rayop walks the dict along the Go type's shape
(``go_types_raycluster_spec.json``: every struct of the spec's type closure, its fields in
struct order with their ``omitempty``/``omitzero`` flags and types). The rules are Go's:

* fields in struct order; a field that is absent or null is the Go zero value: written as
  ``""``, ``0``, ``false``, ``null`` (pointer, slice, map) or the zero struct, unless
  ``omitempty`` drops it (false, 0, "", nil, empty slice or map; never a struct) or
  ``omitzero`` drops a zero struct; keys the type does not have are dropped, as Go's decoder
  drops them;
* map keys sorted; an empty slice or map (present) is ``[]``/``{}``, an absent one ``null``;
* strings escaped as Go does (``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u``-escapes,
  ``\\b \\f \\n \\r \\t``, other control characters ``\\u00xx``, everything else raw UTF-8);
* ``resource.Quantity`` in its canonical form
  (:func:`rayop.apimachinery.quantity.go_round_trip`), ``IntOrString`` as the number or string
  it holds, ``metav1.Time`` as RFC 3339 seconds in UTC (zero: ``null``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from rayop.apimachinery.quantity import QuantityError, go_round_trip

TYPES_FILE = "go_types_raycluster_spec.json"
EXTRA_TYPES_FILES = ("go_types_rayservice_spec.json",)
"""Struct layouts beyond the RayClusterSpec closure (RayServiceSpec), merged into the table."""

Field = tuple[str, str, str]
"""(json name, flags: ``o`` omitempty, ``z`` omitzero; type reference)."""


class GoJsonError(ValueError):
    """A value Go's decoder would refuse for its field's type."""


@functools.cache
def type_table() -> tuple[str, Mapping[str, tuple[Field, ...]]]:
    """Returns (root type, struct fields by type name) of the RayClusterSpec shape, with the
    structs of :data:`EXTRA_TYPES_FILES` (RayServiceSpec) added."""
    files = resources.files(__package__)
    raw = json.loads(files.joinpath(TYPES_FILE).read_text())
    tables = [raw["types"]]
    tables += [json.loads(files.joinpath(f).read_text())["types"] for f in EXTRA_TYPES_FILES]
    types = {
        name: tuple((f[0], f[1], f[2]) for f in fields)
        for table in tables
        for name, fields in table.items()
    }
    return str(raw["root"]), types


class _Output(list[str]):
    """The JSON written so far, and what to do with a value Go's decoder would refuse."""

    def __init__(self, *, lenient: bool) -> None:
        super().__init__()
        self.lenient = lenient


def marshal_raycluster_spec(spec: Mapping[str, Any], *, lenient: bool = False) -> str:
    """Returns Go's ``json.Marshal`` of ``spec`` decoded into KubeRay's ``RayClusterSpec``.

    Args:
        spec: The wire dict.
        lenient: Write a value that does not fit its Go type as plain JSON (Go-escaped)
            instead of raising. Go's decoder refuses such a spec, so KubeRay cannot read the
            object at all and there is no KubeRay value to match; rayop still needs a stable
            hash for it (it can only arise where rayop's CRD leaves the pod template unchecked,
            and the API server then refuses the pods built from it).

    Raises:
        GoJsonError: a value does not fit its Go type (Go's ``json.Unmarshal`` would fail),
            unless ``lenient``.
    """
    root, types = type_table()
    out = _Output(lenient=lenient)
    _encode(spec, root, types, out, root)
    return "".join(out)


def go_string(text: str) -> str:
    """Returns ``text`` as a JSON string literal escaped as Go's encoder (HTML-safe) does."""
    quoted = json.dumps(text, ensure_ascii=False)  # the same escapes below U+0020 as Go
    if not text.isascii() and _SURROGATE.search(text):
        quoted = _SURROGATE.sub(lambda _: "\\ufffd", quoted)
    return quoted.translate(_GO_ONLY) if _NEEDS_GO_ESCAPE.search(text) else quoted


_GO_ONLY = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})
_NEEDS_GO_ESCAPE = re.compile("[<>&\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _is_empty(value: Any, ref: str, types: Mapping[str, tuple[Field, ...]]) -> bool:
    """Tells whether Go's ``omitempty`` drops the field (never for a struct)."""
    if value is None:
        return not (ref in types or ref in ("quantity", "intorstr", "time"))
    if ref.startswith(("[]", "map")) or ref in ("string", "bytes"):
        return isinstance(value, (str, list, Mapping)) and len(value) == 0
    if ref in ("int", "float"):
        return bool(value == 0)
    if ref == "bool":
        return value is False
    return False


def _encode(
    value: Any, ref: str, types: Mapping[str, tuple[Field, ...]], out: _Output, path: str
) -> None:
    mark = len(out)
    try:
        _dispatch(value, ref, types, out, path)
    except (GoJsonError, QuantityError):
        if not out.lenient:
            raise
        del out[mark:]
        out.append(_raw(value))


def _dispatch(
    value: Any, ref: str, types: Mapping[str, tuple[Field, ...]], out: _Output, path: str
) -> None:
    if value is None and ref.startswith(("*", "[]", "map")):
        out.append("null")  # Go's nil pointer, slice or map
    elif ref.startswith("*"):
        _encode(value, ref[1:], types, out, path)
    elif ref.startswith("[]"):
        _encode_list(value, ref[2:], types, out, path)
    elif ref.startswith("map"):
        _encode_map(value, ref[3:], types, out, path)
    elif ref in types:
        _encode_struct(value, types[ref], types, out, path)
    else:
        out.append(_scalar(value, ref, path))


def _encode_list(
    value: Any, elem: str, types: Mapping[str, tuple[Field, ...]], out: _Output, path: str
) -> None:
    if not isinstance(value, list):
        raise GoJsonError(f"{path}: expected a list, got {type(value).__name__}")
    out.append("[")
    for i, item in enumerate(value):
        if i:
            out.append(",")
        _encode(item, elem, types, out, f"{path}[{i}]")
    out.append("]")


def _encode_map(
    value: Any, elem: str, types: Mapping[str, tuple[Field, ...]], out: _Output, path: str
) -> None:
    if not isinstance(value, Mapping):
        raise GoJsonError(f"{path}: expected an object, got {type(value).__name__}")
    out.append("{")
    for i, key in enumerate(sorted(value, key=lambda k: str(k).encode())):
        if i:
            out.append(",")
        out.append(go_string(str(key)))
        out.append(":")
        _encode(value[key], elem, types, out, f"{path}.{key}")
    out.append("}")


def _encode_struct(
    value: Any,
    fields: tuple[Field, ...],
    types: Mapping[str, tuple[Field, ...]],
    out: _Output,
    path: str,
) -> None:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise GoJsonError(f"{path}: expected an object, got {type(value).__name__}")
    out.append("{")
    first = True
    for name, flags, ref in fields:
        item = value.get(name)
        if "o" in flags and _is_empty(item, ref, types):
            continue
        if "z" in flags and item is None:
            continue
        if not first:
            out.append(",")
        first = False
        out.append(go_string(name))
        out.append(":")
        _encode(item, ref, types, out, f"{path}.{name}")
    out.append("}")


def _scalar(value: Any, ref: str, path: str) -> str:
    """Returns the JSON of a value whose Go type is not a struct, pointer, slice or map."""
    if ref == "string" or ref == "bytes":
        if value is None:
            return '""'
        if not isinstance(value, str):
            raise GoJsonError(f"{path}: expected a string, got {type(value).__name__}")
        return go_string(value)
    if ref == "bool":
        if value is None:
            return "false"
        if not isinstance(value, bool):
            raise GoJsonError(f"{path}: expected a boolean, got {type(value).__name__}")
        return "true" if value else "false"
    if ref == "int":
        if value is None:
            return "0"
        if isinstance(value, bool) or not isinstance(value, int):
            raise GoJsonError(f"{path}: expected an integer, got {value!r}")
        return str(value)
    if ref == "quantity":
        return go_string(go_round_trip(0 if value is None else value))
    if ref == "intorstr":
        if value is None:
            return "0"
        if isinstance(value, str):
            return go_string(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise GoJsonError(f"{path}: expected an integer or string, got {value!r}")
        return str(value)
    if ref == "time":
        return "null" if value is None else go_string(_rfc3339(value, path))
    if ref == "raw":
        return _raw(value)
    raise GoJsonError(f"{path}: no Go encoding for type {ref!r}")


def _rfc3339(value: Any, path: str) -> str:
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise GoJsonError(f"{path}: {value!r} is not an RFC 3339 time") from exc
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _raw(value: Any) -> str:
    """Returns raw JSON (``FieldsV1``) compacted, keys in their order, strings Go-escaped."""
    if isinstance(value, Mapping):
        items = (go_string(str(k)) + ":" + _raw(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_raw(v) for v in value) + "]"
    if isinstance(value, str):
        return go_string(value)
    return json.dumps(value)


def marshal_typed(value: Any, ref: str, *, lenient: bool = False) -> str:
    """Returns Go's ``json.Marshal`` of ``value`` decoded into a type of the table.

    Args:
        value: The wire value.
        ref: A type reference of the table: ``core/v1.Toleration``, ``[]core/v1.Toleration``,
            ``*core/v1.Affinity``, ``mapstring``, ``ray/v1.RayServiceSpec``...
        lenient: Write a value that does not fit its Go type as plain JSON (see
            :func:`marshal_raycluster_spec`) instead of raising.

    Raises:
        GoJsonError: the value does not fit the type, unless ``lenient``.
    """
    _, types = type_table()
    out = _Output(lenient=lenient)
    _encode(value, ref, types, out, ref)
    return "".join(out)
