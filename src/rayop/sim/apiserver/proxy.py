"""The proxy subresources: /api/v1/namespaces/<ns>/{services,pods}/<name>[:<port>]/proxy/<path>.

The control plane supplies a resolver from (namespace, service, port) to a base URL of the
in-plane HTTP server behind it, and one for (namespace, pod, port) under :data:`POD_PROXY_KEY`
(KubeRay's ``--use-kubernetes-proxy`` checks a head pod's Serve proxy through
``pods/<pod>:8000/proxy/``); the request is forwarded there and its answer relayed. The
:class:`ServiceRegistry` holds the in-process HTTP services tests register behind a Service.
"""

from __future__ import annotations

import inspect

import aiohttp
from aiohttp import web

from rayop.sim.apiserver.request import ApiRequest, ProxyResolver, ServerContext
from rayop.sim.machinery import errors as se
from rayop.sim.storage.store import Store

__all__ = ["POD_PROXY_KEY", "ServiceRegistry", "handle_proxy"]

POD_PROXY_KEY: web.AppKey[ProxyResolver] = web.AppKey(
    "rayop_sim_pod_proxy",
    ProxyResolver,  # type: ignore[arg-type]
)

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
    """Forwards one request to the in-plane service or pod (10 s timeout).

    Raises:
        StatusError: 404 when the service or pod does not exist, 503 when nothing serves it.
    """
    pods = req.info.key == "/pods"
    if req.namespace is None or req.name is None:
        raise se.not_found(req.info.plural, "", req.name or "")
    service, port = _split_name(req.name)
    if ctx.store.peek(req.info, req.namespace, service) is None:
        raise se.not_found(req.info.plural, "", service)
    resolver = request.app.get(POD_PROXY_KEY) if pods else ctx.proxy_resolver
    base: str | None = None
    if resolver is not None:
        res = resolver(req.namespace, service, port)
        base = await res if inspect.isawaitable(res) else res
    if not base and pods:
        raise se.service_unavailable(
            f"error trying to reach service: nothing listens on port {port or '80'} of pod "
            f'"{service}"'
        )
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


class ServiceRegistry:
    """Maps ``(namespace, service, port)`` to the base URL of an in-process HTTP service.

    The API server's services proxy (``/api/v1/namespaces/<ns>/services/<svc>:<port>/proxy/``)
    forwards to the registered URL. The port may be given by number or by name; a lookup by
    either finds a registration made with the other when the Service object maps them.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._urls: dict[tuple[str, str, str], str] = {}

    def register(self, namespace: str, service: str, port: int | str, base_url: str) -> None:
        """Routes the service's port to ``base_url`` (replacing any earlier registration)."""
        self._urls[(namespace, service, str(port))] = base_url.rstrip("/")

    def unregister(self, namespace: str, service: str, port: int | str) -> None:
        """Removes a registration (no error when absent)."""
        self._urls.pop((namespace, service, str(port)), None)

    def resolve(self, namespace: str, service: str, port: str | None) -> str | None:
        """Returns the base URL for a proxied request, or None when nothing is registered."""
        wanted = str(port or "")
        direct = self._urls.get((namespace, service, wanted))
        if direct is not None:
            return direct
        for alias in self._port_aliases(namespace, service, wanted):
            url = self._urls.get((namespace, service, alias))
            if url is not None:
                return url
        if not wanted:
            candidates = [
                u for (ns, svc, _), u in self._urls.items() if (ns, svc) == (namespace, service)
            ]
            if len(candidates) == 1:
                return candidates[0]
        return None

    def _port_aliases(self, namespace: str, service: str, port: str) -> list[str]:
        info = self._store.resources.get("", "v1", "services")
        svc = self._store.peek(info, namespace, service) if info is not None else None
        aliases: list[str] = []
        ports = ((svc or {}).get("spec") or {}).get("ports") or []
        for p in ports:
            name, number = str(p.get("name") or ""), str(p.get("port") or "")
            if port in (name, number) or (not port and len(ports) == 1):
                aliases.extend(a for a in (name, number) if a)
        return aliases
