"""Content negotiation of the resource endpoints, as kube-apiserver does it.

Request bodies are decoded by Content-Type: JSON and YAML for every resource, Kubernetes
protobuf for the built-in kinds; anything else gets 415 naming the accepted types. Responses
are encoded by Accept: the clauses are taken by quality (then in order) and the first one the
resource supports wins (``*/*`` and ``application/*`` mean JSON); JSON when there is no
Accept. Custom resources (and CustomResourceDefinitions, whose apiextensions messages are not
generated) have no protobuf encoding: a request that accepts only protobuf gets 406 with the
types they do support, as kube-apiserver answers for custom resources. Status errors follow the same
rule, falling back to JSON when nothing acceptable is left.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from rayop.sim.apiserver.protobuf import (
    PROTOBUF,
    decode_protobuf,
    encode_protobuf,
    has_message,
)
from rayop.sim.apiserver.request_body import check_shape, load_yaml, read_body
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo

__all__ = [
    "JSON",
    "PROTOBUF",
    "YAML",
    "accept_clauses",
    "decode_body",
    "encode_body",
    "negotiate",
    "respond",
    "respond_error",
]

JSON = "application/json"
YAML = "application/yaml"
_YAML_ALIASES = ("application/yaml", "text/yaml", "application/x-yaml")
_BUILTIN_TYPES = (JSON, YAML, PROTOBUF)
_CUSTOM_TYPES = (JSON, YAML)


def _supported(info: ResourceInfo | None) -> tuple[str, ...]:
    """The media types of a resource: protobuf only for kinds with a generated message."""
    if info is None or has_message(info.api_version, info.kind):
        return _BUILTIN_TYPES
    return _CUSTOM_TYPES


def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


async def decode_body(request: web.Request, info: ResourceInfo | None) -> Any:
    """Decodes a request body by its Content-Type (None for an empty body).

    Raises:
        StatusError: 415 for a type the resource does not accept, 400 for a malformed body
            (or one nested too deeply or expanding too far: request_body.check_shape), 413 for
            a body over kube-apiserver's 3 MiB.
    """
    ctype = _media_type(request.headers.get("Content-Type", ""))
    raw = await read_body(request)
    if ctype == PROTOBUF and PROTOBUF in _supported(info):
        return decode_protobuf(raw) if raw else None
    if ctype not in ("", JSON, *_YAML_ALIASES):
        accepted = ", ".join(_supported(info))
        raise se.StatusError(
            se.status_body(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {accepted}",
            )
        )
    if not raw:
        return None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            body = load_yaml(raw)
        except (yaml.YAMLError, RecursionError) as exc:
            raise se.bad_request(f"unable to decode the request body: {exc}") from exc
        check_shape(body, shared=True)  # YAML aliases share parts
        return body
    check_shape(body)
    return body


def accept_clauses(accept: str) -> list[tuple[str, dict[str, str]]]:
    """The clauses of an Accept header as (media type, parameters), best quality first (stable
    for equal ones); ``q`` is read and left out of the parameters, a clause of quality 0 is
    dropped. Names are lower case, values as sent."""
    ranked: list[tuple[float, int, str, dict[str, str]]] = []
    for i, clause in enumerate(accept.split(",")):
        media, *raw = (p.strip() for p in clause.split(";"))
        params: dict[str, str] = {}
        for item in raw:
            name, _, value = item.partition("=")
            params[name.strip().lower()] = value.strip()
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 0.0
        if media and quality > 0:
            ranked.append((-quality, i, media.lower(), params))
    ranked.sort(key=lambda r: r[:2])
    return [(media, params) for _, _, media, params in ranked]


def _clauses(accept: str) -> list[str]:
    """The media types of an Accept header's clauses for whole objects, best quality first. A
    clause with an ``as`` parameter asks for a transform (a Table, PartialObjectMetadata:
    tables.py, metadata_only.py serve those) and is left out."""
    return [media for media, params in accept_clauses(accept) if "as" not in params]


def negotiate(request: web.Request, info: ResourceInfo | None) -> str:
    """Returns the media type to answer with (JSON, YAML or PROTOBUF).

    Raises:
        StatusError: 406 when no acceptable type is supported.
    """
    accept = request.headers.get("Accept", "")
    if not accept.strip():
        return JSON
    supported = _supported(info)
    for media in _clauses(accept):
        if media in ("*/*", "application/*"):
            return JSON
        if media in _YAML_ALIASES:
            return YAML
        if media in supported:
            return media
    raise se.StatusError(
        se.status_body(
            406,
            "NotAcceptable",
            f"only the following media types are accepted: {', '.join(supported)}",
        )
    )


def encode_body(media: str, body: Any, api_version: str = "", kind: str = "") -> bytes:
    """Encodes a dict in the negotiated media type (protobuf needs the type's message).

    Raises:
        StatusError: 500 when a stored value cannot be encoded in protobuf.
    """
    if media == PROTOBUF:
        return encode_protobuf(body, api_version, kind)
    if media == YAML:
        return yaml.safe_dump(body, sort_keys=False).encode()
    return orjson.dumps(body)


def respond(
    request: web.Request,
    info: ResourceInfo | None,
    body: Any,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """Answers with ``body`` in the media type the client accepts.

    Raises:
        StatusError: 406 when nothing acceptable is supported, 500 when a stored value does
            not fit its protobuf field.
    """
    media = negotiate(request, info)
    return web.Response(
        body=encode_body(media, body), status=status, content_type=media, headers=headers
    )


def respond_error(
    request: web.Request | None, err: se.StatusError, info: ResourceInfo | None = None
) -> web.Response:
    """Answers with a Status error in the accepted media type (JSON when none is left)."""
    media = JSON
    if request is not None:
        try:
            media = negotiate(request, info)
        except se.StatusError:
            media = JSON
    status = err.status
    if media == PROTOBUF:
        status = {"apiVersion": "v1", "kind": "Status", **status}
    return web.Response(
        body=encode_body(media, status),
        status=err.code,
        content_type=media,
        headers=err.headers or None,
    )
