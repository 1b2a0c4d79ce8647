"""An HTTP forward proxy into the embedded plane's network, for processes outside it.

KubeRay in its default mode (no ``--use-kubernetes-proxy``) calls a Ray dashboard directly at
``http://<head service>.<namespace>.svc.cluster.local:8265`` and a head's Serve proxy at
``http://<pod IP>:8000``. Inside a cluster, DNS and the pod network make those reachable; on the
embedded plane nothing answers at those names and addresses. Go's HTTP client (and curl, and
Python's ``requests``) honour ``HTTP_PROXY``, so a process started with
``HTTP_PROXY=http://127.0.0.1:<port>`` sends such a request here in absolute form; the proxy
maps its host to what serves it in the plane (a Service's cluster DNS name through the Service's
selector, a pod IP through the pod that has it, the same lookups the API server's proxy
subresources make: a simulated head, or with ``--real-ray`` the pod's own process) and relays the
exchange. Loopback addresses are never proxied by those clients, so the API server itself (and,
with ``--real-ray``, a pod's loopback IP) is reached directly.

Only plain HTTP is relayed: ``CONNECT`` (HTTPS through the proxy) is answered 405, a host that
names no ready head 502, each with a message saying why.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Protocol

import aiohttp
from aiohttp import web

from rayop.apimachinery.certs import is_ip
from rayop.sim.dashboard.service_dns import split_service_url

__all__ = ["ClusterAddresses", "ClusterHttpProxy"]

log = logging.getLogger(__name__)

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
"""Headers that belong to one hop (RFC 9110 7.6.1), not to the relayed exchange."""


class ClusterAddresses(Protocol):
    """Where the plane's Services and pod IPs are served (``EmbeddedControlPlane`` is one: the
    simulated heads, or with ``--real-ray`` the pods' processes); never blocks."""

    def resolve_service_url(self, namespace: str, service: str, port: str) -> str | None:
        """Returns the base URL serving ``service:port`` (port name or number), or None."""
        ...

    def resolve_pod_ip_url(self, pod_ip: str, port: str) -> str | None:
        """Returns the base URL serving ``<pod IP>:<port>``, or None."""
        ...


class ClusterHttpProxy:
    """Serves the forward proxy on ``host:port`` while entered (see the module docstring).

    Args:
        addresses: Where the plane serves Services and pod IPs (the running
            ``EmbeddedControlPlane``, simulated or ``--real-ray``).
        host: The address to listen on (loopback: the proxy has no authentication).
        port: The port (0 picks a free one; read :attr:`url` after entering).
    """

    def __init__(self, addresses: ClusterAddresses, host: str = "127.0.0.1", port: int = 0):
        self._addresses = addresses
        self._host = host
        self._port = port
        self._runner: web.ServerRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    def resolve(self, host: str, port: int) -> str | None:
        """Returns the base URL of what serves ``host:port`` in the plane, or None."""
        if is_ip(host):
            return self._addresses.resolve_pod_ip_url(host, str(port))
        split = split_service_url(f"http://{host}:{port}")
        if split is None:
            return None
        return self._addresses.resolve_service_url(*split)

    async def __aenter__(self) -> ClusterHttpProxy:
        # A bare server, no router: a proxy's request targets are absolute URLs or, for
        # CONNECT, an authority, not paths to route.
        self._runner = web.ServerRunner(
            web.Server(self._relay), handle_signals=False, shutdown_timeout=0.2
        )
        await self._runner.setup()
        try:
            site = web.TCPSite(self._runner, self._host, self._port)
            await site.start()
        except BaseException:
            await self._runner.cleanup()
            self._runner = None
            raise
        # No cap on upstream connections (aiohttp's default is 100 for the session): each relayed
        # exchange is its own connection, as on a pod network, so heads that never answer
        # (the benchmarks' hanging dashboards, held up to the 60 s timeout) cannot leave the
        # other heads' requests queued behind them in a shared pool.
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=60),
            auto_decompress=False,
            connector=aiohttp.TCPConnector(limit=0),
        )
        bound = self._runner.addresses[0]
        self.url = f"http://{self._host}:{int(bound[1])}"
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _relay(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.method == "CONNECT":
            return web.Response(
                status=405,
                text="the embedded plane's proxy relays plain HTTP only (no CONNECT/HTTPS)\n",
            )
        target = request.url
        if not request.raw_path.startswith(("http://", "https://")) or target.host is None:
            return web.Response(
                status=400,
                text="this is a forward proxy: send requests in absolute form "
                "(set HTTP_PROXY to its URL)\n",
            )
        port = target.port or 80
        base = self.resolve(target.host, port)
        if base is None:
            return web.Response(
                status=502,
                text=f"nothing in the embedded plane serves {target.host}:{port} "
                "(no ready head pod behind that service or pod IP)\n",
            )
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        body = await request.read()
        url = base.rstrip("/") + target.raw_path_qs
        try:
            async with self._session.request(
                request.method, url, headers=headers, data=body or None, allow_redirects=False
            ) as upstream:
                payload = await upstream.read()
                out = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
                return web.Response(status=upstream.status, body=payload, headers=out)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.debug("proxying %s %s failed: %s", request.method, target, exc)
            return web.Response(status=502, text=f"error reaching {target.host}:{port}: {exc}\n")
