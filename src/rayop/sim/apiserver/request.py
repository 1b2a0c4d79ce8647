"""Shared types of the API server's HTTP layer: request context, parsed request, responses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from rayop.sim.apiserver.audit import Audit
from rayop.sim.apiserver.faults import FaultInjector
from rayop.sim.apiserver.negotiation import respond_error
from rayop.sim.apiserver.pagination import Snapshots
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.store import Store

__all__ = [
    "CTX_KEY",
    "ApiRequest",
    "ProxyResolver",
    "ServerContext",
    "error_response",
    "json_response",
]

ProxyResolver = Callable[[str, str, str], "str | Awaitable[str | None] | None"]
_JSON = "application/json"


@dataclass
class ServerContext:
    """Everything handlers need; one per application."""

    store: Store
    token: str | None
    faults: FaultInjector
    audit: Audit
    proxy_resolver: ProxyResolver | None
    bookmark_interval: float
    snapshots: Snapshots = field(default_factory=Snapshots)
    session: aiohttp.ClientSession | None = None


@dataclass
class ApiRequest:
    """A parsed resource request.

    Attributes:
        info: The resource.
        namespace: Namespace from the path (None for cluster scope or all namespaces).
        name: Object name from the path, or None for the collection.
        subresource: "status", "proxy"... or "".
        subpath: What follows the subresource (proxy path), without a leading slash.
        verb: Kubernetes audit verb.
    """

    info: ResourceInfo
    namespace: str | None
    name: str | None
    subresource: str
    subpath: str
    verb: str
    audit_name: str = ""


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """Encodes ``body`` with orjson into an application/json response."""
    return web.Response(body=orjson.dumps(body), status=status, content_type=_JSON, headers=headers)


def error_response(
    err: se.StatusError, request: web.Request | None = None, info: ResourceInfo | None = None
) -> web.Response:
    """Turns a StatusError into its HTTP response (in the media type ``request`` accepts)."""
    if request is None:
        return json_response(err.status, err.code, err.headers or None)
    return respond_error(request, err, info)


CTX_KEY: web.AppKey[ServerContext] = web.AppKey("rayop_sim_ctx", ServerContext)
