"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge merges the lists controllers touch by key (containers by name, env by name,
ports by containerPort/port, volumes by name, volumeMounts by mountPath, conditions by type,
ownerReferences by uid...) and honours ``$patch: delete|replace``,
``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` (the latter ignored).

A JSON patch ``replace`` of an object member that does not exist sets it, as kube-apiserver's
JSON patch library (evanphx/json-patch v4: its object ``get`` finds no error in a missing key)
does, where RFC 6902 would refuse it; the Ray autoscaler relies on it when it replaces
``/spec/workerGroupSpecs/<i>/scaleStrategy`` of a group that has none. Replacing a missing
array index, or removing a missing member, is still refused. See
https://github.com/evanphx/json-patch/blob/v4.12.0/patch.go
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer
import orjson

from rayop.sim.apiserver.request_body import check_shape
from rayop.sim.machinery import errors as se

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "apply_patch",
    "json_merge_patch",
    "strategic_merge_patch",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# field name -> merge key ("" = merge primitive lists as a set)
_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "finalizers": "",
}


def json_merge_patch(target: Any, patch: Any) -> Any:
    """Applies an RFC 7386 merge patch; returns the result (target is not modified)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = json_merge_patch(out.get(key), value)
    return out


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        for it in items:
            if isinstance(it, dict):
                return "containerPort" if "containerPort" in it else "port"
        return "port"
    return _MERGE_KEYS.get(field)


def _merge_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    key = _merge_key(field, original + patch)
    if key is None:
        return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    if key == "":
        merged = list(original)
        for p in patch:
            if p not in merged:
                merged.append(p)
        return merged
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    out = [dict(o) if isinstance(o, dict) else o for o in original]
    for p in patch:
        if not isinstance(p, dict):
            out.append(p)
            continue
        idx = next(
            (i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == p.get(key)),
            None,
        )
        if p.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(strategic_merge_patch({}, p))
        else:
            out[idx] = strategic_merge_patch(out[idx], p)
    return out


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Applies a strategic merge patch to a built-in object; returns the result."""
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            cur = out.get(field)
            if isinstance(cur, list) and isinstance(value, list):
                out[field] = [x for x in cur if x not in value]
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = _merge_list(key, out[key], value)
        elif isinstance(value, list):
            out[key] = _merge_list(key, [], value)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = value
    return out


def _load_json(body: bytes) -> Any:
    try:
        patch = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise se.bad_request(f"error decoding patch: {exc}") from exc
    check_shape(patch)
    return patch


def apply_patch(content_type: str, original: dict[str, Any], body: bytes, *, custom: bool) -> Any:
    """Applies a PATCH body of the given content type to ``original``; returns the new object.

    Raises:
        StatusError: 415 for an unknown type (or strategic merge on a custom resource),
            400 for a malformed body, 422 when a JSON patch operation fails.
    """
    ctype = content_type.split(";", 1)[0].strip()
    if ctype == MERGE_PATCH:
        patch = _load_json(body)
        if not isinstance(patch, dict):
            raise se.bad_request("a merge patch must be a JSON object")
        return json_merge_patch(original, patch)
    if ctype == JSON_PATCH:
        ops = _load_json(body)
        if not isinstance(ops, list):
            raise se.bad_request("a JSON patch must be a list of operations")
        try:
            doc = original
            for op in ops:
                doc = jsonpatch.JsonPatch([_replace_as_kubernetes_does(doc, op)]).apply(doc)
            return doc
        except jsonpatch.JsonPatchTestFailed as exc:
            raise se.invalid(
                "",
                "",
                original.get("metadata", {}).get("name", ""),
                [("", "FieldValueInvalid", str(exc))],
            ) from exc
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise se.StatusError(
                se.status_body(
                    422,
                    "Invalid",
                    f"the server rejected our request due to an error in our request: {exc}",
                )
            ) from exc
        except (TypeError, KeyError, IndexError) as exc:
            raise se.bad_request(f"invalid JSON patch: {exc}") from exc
    if ctype == STRATEGIC_MERGE_PATCH:
        if custom:
            raise se.unsupported_media_type(ctype)
        patch = _load_json(body)
        if not isinstance(patch, dict):
            raise se.bad_request("a strategic merge patch must be a JSON object")
        return strategic_merge_patch(original, patch)
    raise se.unsupported_media_type(ctype)


def _replace_as_kubernetes_does(doc: Any, op: Any) -> Any:
    """Turns a ``replace`` of a missing member of an existing object into an ``add``."""
    if not isinstance(op, dict) or op.get("op") != "replace" or "path" not in op:
        return op
    pointer = jsonpointer.JsonPointer(str(op["path"]))
    if not pointer.parts:
        return op
    parent = jsonpointer.JsonPointer.from_parts(pointer.parts[:-1]).resolve(doc, None)
    if isinstance(parent, dict) and pointer.parts[-1] not in parent:
        return {**op, "op": "add"}
    return op
