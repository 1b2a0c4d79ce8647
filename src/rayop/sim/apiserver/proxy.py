"""The services proxy subresource: /api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>.

The control plane supplies a resolver from (namespace, service, port) to a base URL of the
in-plane HTTP server behind it; the request is forwarded there and its answer relayed.
"""

from __future__ import annotations

import inspect

import aiohttp
from aiohttp import web

from rayop.sim.apiserver.request import ApiRequest, ServerContext
from rayop.sim.machinery import errors as se

__all__ = ["handle_proxy"]

_HOP_HEADERS = frozenset(
    {
        "host",
        "authorization",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "upgrade",
        "proxy-authorization",
        "te",
        "trailer",
    }
)


def _split_name(name: str) -> tuple[str, str]:
    """Splits ``[scheme:]name[:port]`` into (service, port); port may be ""."""
    parts = name.split(":")
    if len(parts) == 3:
        return parts[1], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    return parts[0], ""


async def handle_proxy(ctx: ServerContext, request: web.Request, req: ApiRequest) -> web.Response:
    """Forwards one request to the in-plane service (10 s timeout).

    Raises:
        StatusError: 404 when the service does not exist, 503 when nothing serves it.
    """
    if req.namespace is None or req.name is None:
        raise se.not_found("services", "", req.name or "")
    service, port = _split_name(req.name)
    if ctx.store.peek(req.info, req.namespace, service) is None:
        raise se.not_found("services", "", service)
    base: str | None = None
    if ctx.proxy_resolver is not None:
        res = ctx.proxy_resolver(req.namespace, service, port)
        base = await res if inspect.isawaitable(res) else res
    if not base:
        raise se.service_unavailable(f'no endpoints available for service "{service}"')
    url = base.rstrip("/") + "/" + req.subpath
    if ctx.session is None:
        ctx.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
    body = await request.read()
    try:
        async with ctx.session.request(
            request.method,
            url,
            params=request.query,
            headers=headers,
            data=body or None,
            allow_redirects=False,
        ) as upstream:
            payload = await upstream.read()
            out_headers = {
                k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS
            }
            return web.Response(body=payload, status=upstream.status, headers=out_headers)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise se.service_unavailable(f"error trying to reach service: {exc}") from exc
