"""``/openapi/v2``: the Swagger 2.0 document kubectl falls back to, in JSON or gnostic protobuf.

kubectl validates a manifest against ``/openapi/v3`` first; for a kind the v3 document does not
describe (a kind whose CRD is not installed) it falls back to ``/openapi/v2``, which it reads
only as protobuf (gnostic's ``openapi_v2.Document``). When that download fails, ``kubectl
apply`` stops with "failed to download openapi" instead of the API server's "no matches for
kind". The document declares, as the v3 one does, every served resource's operations with their
``x-kubernetes-group-version-kind`` and the ``fieldValidation`` query parameter (what kubectl
checks before it leaves validation to the server); no schema definitions are included, so
kubectl's client-side validation finds no model and leaves the object to the server.

Accept is negotiated as kube-openapi's handler does: JSON, or either protobuf media type
(answered as ``application/com.github.proto-openapi.spec.v2.v1.0+protobuf``), or 406 with an
empty body for anything else.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import orjson
import yaml
from aiohttp import web

from rayop.apimachinery.objects import Obj
from rayop.sim.apiserver.openapi_proto import openapiv2_pb2 as v2
from rayop.sim.machinery import kube_version
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry

__all__ = ["PROTOBUF_V2", "openapi_v2_document", "openapi_v2_response", "to_protobuf"]

PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""The media type of the protobuf answer (what kube-openapi sends for either form asked)."""
_PROTOBUF_V2_AT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
"""The form kubectl asks for; Go's mime parser refuses the "@" in a response's Content-Type."""
_JSON = "application/json"
_FIELD_VALIDATION = {
    "uniqueItems": True,
    "type": "string",
    "description": "fieldValidation instructs the server on how to handle unknown fields.",
    "name": "fieldValidation",
    "in": "query",
}
_METHODS = ("get", "put", "post", "delete", "patch")


def _operation(action: str, info: ResourceInfo) -> Obj:
    gvk = {"group": info.group, "kind": info.kind, "version": info.version}
    return {
        "parameters": [dict(_FIELD_VALIDATION)],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }


def openapi_v2_document(infos: list[ResourceInfo]) -> Obj:
    """Returns the Swagger 2.0 document (a dict) for the given resources."""
    paths: Obj = {}
    for info in sorted(infos, key=lambda i: (i.group, i.version, i.plural)):
        prefix = f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}"
        base = (
            f"{prefix}/namespaces/{{namespace}}/{info.plural}"
            if info.namespaced
            else f"{prefix}/{info.plural}"
        )
        paths[base] = {"get": _operation("list", info), "post": _operation("post", info)}
        paths[f"{base}/{{name}}"] = {
            "get": _operation("get", info),
            "put": _operation("put", info),
            "delete": _operation("delete", info),
            "patch": _operation("patch", info),
        }
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": kube_version.GIT_VERSION},
        "paths": paths,
        "definitions": {},
    }


def _extensions(obj: Obj) -> list[v2.NamedAny]:
    return [
        v2.NamedAny(name=key, value=v2.Any(yaml=yaml.safe_dump(value, sort_keys=True)))
        for key, value in obj.items()
        if key.startswith("x-")
    ]


def _parameter(param: Obj) -> v2.ParametersItem:
    query = v2.QueryParameterSubSchema(
        name=str(param["name"]),
        description=str(param.get("description", "")),
        type=str(param.get("type", "")),
        unique_items=bool(param.get("uniqueItems", False)),
    )
    setattr(query, "in", str(param["in"]))  # "in" is a Python keyword
    return v2.ParametersItem(
        parameter=v2.Parameter(
            non_body_parameter=v2.NonBodyParameter(query_parameter_sub_schema=query)
        )
    )


def _to_operation(op: Obj) -> v2.Operation:
    responses = v2.Responses(
        response_code=[
            v2.NamedResponseValue(
                name=code,
                value=v2.ResponseValue(response=v2.Response(description=str(r["description"]))),
            )
            for code, r in op.get("responses", {}).items()
        ]
    )
    return v2.Operation(
        parameters=[_parameter(p) for p in op.get("parameters", [])],
        responses=responses,
        vendor_extension=_extensions(op),
    )


def to_protobuf(doc: Obj) -> bytes:
    """Encodes a document built by :func:`openapi_v2_document` as gnostic's protobuf."""
    out = v2.Document(
        swagger=str(doc["swagger"]),
        info=v2.Info(title=str(doc["info"]["title"]), version=str(doc["info"]["version"])),
    )
    for path, item in doc["paths"].items():
        path_item = v2.PathItem()
        for method in _METHODS:
            if method in item:
                getattr(path_item, method).CopyFrom(_to_operation(item[method]))
        out.paths.path.append(v2.NamedPathItem(name=path, value=path_item))
    out.definitions.SetInParent()
    return out.SerializeToString(deterministic=True)


@lru_cache(maxsize=8)
def _encoded(key: tuple[ResourceInfo, ...]) -> tuple[bytes, bytes]:
    doc = openapi_v2_document(list(key))
    return orjson.dumps(doc), to_protobuf(doc)


def _choice(accept: str) -> str | None:
    """Returns the media type to answer, or None when none of ``accept`` can be served."""
    clauses: list[tuple[float, int, str]] = []
    for index, part in enumerate((accept or "*/*").split(",")):
        fields = [f.strip() for f in part.split(";")]
        q = 1.0
        for f in fields[1:]:
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if fields[0] and q > 0:
            clauses.append((-q, index, fields[0].lower()))
    for _, _, media in sorted(clauses):
        for offer in (_JSON, _PROTOBUF_V2_AT, PROTOBUF_V2):
            kind, sub = offer.split("/", 1)
            want_kind, _, want_sub = media.partition("/")
            if want_kind in (kind, "*") and want_sub in (sub, "*"):
                return offer
    return None


def openapi_v2_response(registry: ResourceRegistry, request: web.Request) -> web.Response:
    """Answers GET /openapi/v2 in the negotiated encoding (406 when none fits)."""
    media = _choice(request.headers.get("Accept", ""))
    if media is None:
        return web.Response(status=406)
    as_json, as_protobuf = _encoded(tuple(registry.all()))
    body = as_json if media == _JSON else as_protobuf
    etag = '"' + hashlib.sha512(body).hexdigest()[:64].upper() + '"'
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers={"ETag": etag})
    resp = web.Response(body=body, headers={"ETag": etag, "Vary": "Accept"})
    resp.content_type = _JSON if media == _JSON else PROTOBUF_V2
    return resp
