"""The aiohttp application of the embedded API server: routing, auth, faults, audit.

``build_app`` wires the store into an :class:`aiohttp.web.Application` serving the
Kubernetes REST API (see handlers_crud, handlers_watch, handlers_proxy for the verbs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from rayop.sim.apiserver import discovery
from rayop.sim.apiserver.audit import Audit
from rayop.sim.apiserver.crud import handle_crud
from rayop.sim.apiserver.faults import FaultInjector, Faults
from rayop.sim.apiserver.negotiation import decode_body
from rayop.sim.apiserver.openapi_v2 import openapi_v2_response
from rayop.sim.apiserver.pod_exec import STREAMING_SUBRESOURCES, handle_pod_stream
from rayop.sim.apiserver.pod_log import handle_pod_log
from rayop.sim.apiserver.proxy import handle_proxy
from rayop.sim.apiserver.rbac import Attributes, Rbac, UserInfo
from rayop.sim.apiserver.request import (
    CTX_KEY,
    ApiRequest,
    ProxyResolver,
    ServerContext,
    error_response,
    json_response,
)
from rayop.sim.apiserver.streaming.exec_process import reap_killed
from rayop.sim.apiserver.token import handle_token_request
from rayop.sim.apiserver.watch import handle_watch
from rayop.sim.machinery import errors as se
from rayop.sim.storage.store import Store

__all__ = ["RBAC_KEY", "build_app", "context_of"]

RBAC_KEY: web.AppKey[Rbac] = web.AppKey("rayop_sim_rbac", Rbac)


_WRITE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def _verb(method: str, name: str | None, query: Any) -> str:
    if method == "GET":
        if query.get("watch") in ("1", "true", "True"):
            return "watch"
        return "list" if name is None else "get"
    if method == "DELETE":
        return "deletecollection" if name is None else "delete"
    verb = _WRITE_VERBS.get(method)
    if verb is None:
        raise se.method_not_allowed()
    return verb


def _parse(
    ctx: ServerContext, request: web.Request, group: str, version: str, tail: str
) -> ApiRequest:
    segs = [s for s in tail.split("/")] if tail else []
    if segs and segs[-1] == "":
        segs.pop()
    reg = ctx.store.resources
    namespace: str | None = None
    if len(segs) >= 3 and segs[0] == "namespaces":
        cand = reg.get(group, version, segs[2])
        if (
            cand is not None
            and cand.namespaced
            and not (group == "" and segs[2] in ("status", "finalize"))
        ):
            namespace = segs[1]
            segs = segs[2:]
    if not segs:
        raise se.StatusError(
            se.status_body(404, "NotFound", "the server could not find the requested resource")
        )
    info = reg.get(group, version, segs[0])
    if info is None:
        raise se.StatusError(
            se.status_body(404, "NotFound", "the server could not find the requested resource")
        )
    name = segs[1] if len(segs) > 1 else None
    sub = segs[2] if len(segs) > 2 else ""
    subpath = "/".join(segs[3:]) if len(segs) > 3 else ""
    if sub == "proxy" and tail.endswith("/") and subpath:
        subpath += "/"
    verb = _verb(request.method, name, request.query)
    return ApiRequest(info, namespace, name, sub, subpath, verb)


def _authenticate(request: web.Request) -> UserInfo | None:
    return request.app[RBAC_KEY].authenticate(request.headers.get("Authorization", ""))


def _authorized(ctx: ServerContext, request: web.Request) -> bool:
    return _authenticate(request) is not None


async def _authorize(request: web.Request, user: UserInfo, req: ApiRequest) -> None:
    if user.superuser:
        return
    rbac = request.app[RBAC_KEY]
    namespace = req.namespace or ""
    rbac.authorize(
        user,
        Attributes(
            req.verb, req.info.group, req.info.plural, req.subresource, namespace, req.name or ""
        ),
    )
    if req.verb in ("create", "update") and not req.subresource:
        try:
            body = await decode_body(request, req.info)
        except se.StatusError:
            return  # a body that does not decode: the handler answers the error
        if isinstance(body, dict):
            rbac.check_escalation(user, req.info, namespace, body)


async def _resource(
    request: web.Request, group: str, version: str, tail: str
) -> web.StreamResponse:
    ctx = request.app[CTX_KEY]
    user = _authenticate(request)
    if user is None:
        return error_response(se.unauthorized())
    try:
        req = _parse(ctx, request, group, version, tail)
    except se.StatusError as err:
        return error_response(err, request)
    faults = ctx.faults
    # Long-running requests (watches, exec/attach/port-forward streams) are not in flight, as
    # kube-apiserver's max-in-flight filter exempts them.
    counted = req.verb != "watch" and req.subresource not in STREAMING_SUBRESOURCES
    code = 500
    resp: web.StreamResponse
    try:
        if counted:
            faults.enter()
        try:
            delay = faults.latency(req.verb)
            if delay > 0:
                async with faults.service_slot():
                    await asyncio.sleep(delay)
            faults.check_errors(req.verb, resource_request=True)
            await _authorize(request, user, req)
            if req.verb == "watch":
                request[_AUDIT_ON_START] = lambda status: _audit(request, req, user, status)
            if req.subresource == "token" and req.info.key == "/serviceaccounts":
                resp = await handle_token_request(ctx, request, req, request.app[RBAC_KEY])
            elif req.subresource == "proxy" and req.info.key in ("/services", "/pods"):
                resp = await handle_proxy(ctx, request, req)
            elif req.subresource == "log" and req.info.key == "/pods":
                resp = await handle_pod_log(ctx, request, req)
            elif req.subresource in STREAMING_SUBRESOURCES and req.info.key == "/pods":
                resp = await handle_pod_stream(ctx, request, req)
            elif req.verb == "watch":
                resp = await handle_watch(ctx, request, req)
            else:
                resp = await handle_crud(ctx, request, req)
        finally:
            if counted:
                faults.leave()
        code = resp.status
        return resp
    except se.StatusError as err:
        code = err.code
        return error_response(err, request, req.info)
    finally:
        _audit(request, req, user, code)


_AUDITED: web.RequestKey[bool] = web.RequestKey("rayop_audited", bool)
_AUDIT_ON_START: web.RequestKey[Callable[[int], None]] = web.RequestKey(
    "rayop_audit_on_start",
    Callable[[int], None],  # type: ignore[arg-type]
)


def _audit(request: web.Request, req: ApiRequest, user: UserInfo, code: int) -> None:
    """Records the request in the audit once (a watch when its stream starts, as a real
    API server's ResponseStarted stage; anything else when it finishes)."""
    if request.get(_AUDITED):
        return
    request[_AUDITED] = True
    request.app[CTX_KEY].audit.record(
        verb=req.verb,
        resource=req.info.plural,
        code=code,
        subresource=req.subresource,
        namespace=req.namespace or "",
        name=req.name or req.audit_name,
        user=user.name,
        group=req.info.group,
    )


async def _on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    record = request.get(_AUDIT_ON_START)
    if record is not None:
        record(response.status)


async def _core(request: web.Request) -> web.StreamResponse:
    return await _resource(request, "", "v1", request.match_info["tail"])


async def _grouped(request: web.Request) -> web.StreamResponse:
    m = request.match_info
    return await _resource(request, m["group"], m["version"], m["tail"])


def _guard(
    fn: Callable[[ServerContext, web.Request], Any],
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        ctx = request.app[CTX_KEY]
        if not _authorized(ctx, request):
            return error_response(se.unauthorized())
        try:
            body = fn(ctx, request)
        except se.StatusError as err:
            return error_response(err)
        if isinstance(body, web.StreamResponse):
            return body
        if body is None:
            return error_response(
                se.StatusError(
                    se.status_body(
                        404, "NotFound", "the server could not find the requested resource"
                    )
                )
            )
        return json_response(body)

    return handler


def _metrics(ctx: ServerContext, request: web.Request) -> web.Response:
    return web.Response(body=ctx.audit.render_metrics(), content_type="text/plain", charset="utf-8")


async def _unknown_path(request: web.Request) -> web.Response:
    ctx = request.app[CTX_KEY]
    if not _authorized(ctx, request):
        return error_response(se.unauthorized())
    msg = "the server could not find the requested resource"
    return error_response(se.StatusError(se.status_body(404, "NotFound", msg)))


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def _register_routes(app: web.Application) -> None:
    r = app.router
    r.add_get("/healthz", _health)
    r.add_get("/livez", _health)
    r.add_get("/readyz", _health)
    r.add_get("/version", _guard(lambda c, q: discovery.version_info()))
    r.add_get("/version/", _guard(lambda c, q: discovery.version_info()))
    r.add_get("/metrics", _guard(_metrics))
    r.add_get("/api", _guard(lambda c, q: discovery.api_versions(q.host)))
    r.add_get("/api/", _guard(lambda c, q: discovery.api_versions(q.host)))
    r.add_get(
        "/api/v1", _guard(lambda c, q: discovery.api_resource_list(c.store.resources, "", "v1"))
    )
    r.add_get("/apis", _guard(lambda c, q: discovery.api_group_list(c.store.resources)))
    r.add_get("/apis/", _guard(lambda c, q: discovery.api_group_list(c.store.resources)))
    r.add_get(
        "/apis/{group}",
        _guard(lambda c, q: discovery.api_group(c.store.resources, q.match_info["group"])),
    )
    r.add_get(
        "/apis/{group}/{version}",
        _guard(
            lambda c, q: discovery.api_resource_list(
                c.store.resources, q.match_info["group"], q.match_info["version"]
            )
        ),
    )
    r.add_get("/openapi/v2", _guard(lambda c, q: openapi_v2_response(c.store.resources, q)))
    r.add_get("/openapi/v3", _guard(lambda c, q: discovery.openapi_v3_index(c.store.resources)))
    r.add_get(
        "/openapi/v3/{rel:.*}",
        _guard(
            lambda c, q: discovery.openapi_v3_group_version(c.store.resources, q.match_info["rel"])
        ),
    )
    r.add_route("*", "/api/v1/{tail:.*}", _core)
    r.add_route("*", "/apis/{group}/{version}/{tail:.*}", _grouped)
    r.add_route("*", "/{tail:.*}", _unknown_path)


def build_app(
    store: Store,
    *,
    token: str | None,
    faults: Faults,
    audit: Audit,
    proxy_resolver: ProxyResolver | None = None,
    bookmark_interval: float = 10.0,
    rbac: Rbac | None = None,
) -> web.Application:
    """Builds the API server application (never blocks; run it with an aiohttp runner).

    Args:
        store: The object store served.
        token: Required bearer token (None disables authentication).
        faults: Fault knobs; mutate the instance to change behaviour at run time.
        audit: Receives a record of every resource request.
        proxy_resolver: ``(namespace, service, port) -> base URL or None`` (may be async) for
            the services proxy subresource; 503 when missing or when it returns None.
        bookmark_interval: Idle seconds between BOOKMARK events on watches that allow them.
        rbac: Service-account tokens and RBAC authorization (a fresh one for ``token`` when
            None); ``token`` stays all-powerful either way.
    """
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[RBAC_KEY] = rbac if rbac is not None else Rbac(store, token)
    ctx = ServerContext(
        store, token, FaultInjector(faults), audit, proxy_resolver, bookmark_interval
    )
    app[CTX_KEY] = ctx

    async def close_session(_app: web.Application) -> None:
        await reap_killed()
        if ctx.session is not None:
            await ctx.session.close()

    app.on_cleanup.append(close_session)
    app.on_response_prepare.append(_on_response_prepare)
    _register_routes(app)
    return app


def context_of(app: web.Application) -> ServerContext:
    """Returns the ServerContext of an application built by :func:`build_app`."""
    return app[CTX_KEY]
