"""How the Ray dashboard client reaches a head: directly, or through the services proxy.

:class:`DirectTransport` talks HTTP to ``http://<head svc>.<ns>.svc.<domain>:8265`` (2 s per call;
KubeRay's default), costing no API server request; where the operator cannot resolve cluster DNS
(the embedded control plane of ``rayop up`` and the test kit), a :data:`ServiceResolver` it is
given maps that address to where the head really listens;
:class:`ProxyTransport` goes through the API server's services proxy
(``/api/v1/namespaces/<ns>/services/<svc>:dashboard/proxy``, 10 s per call; KubeRay's
``--use-kubernetes-proxy``). Both take a :class:`DashboardRequest`, return the status and body of
any answer and raise :class:`~rayop.controllers.dashboard.errors.DashboardUnavailable` (or its
``DashboardTimeout``) when no answer came from the dashboard itself.

A direct transport honours ``HTTP_PROXY``/``NO_PROXY`` as KubeRay's Go client does (its
``http.Client`` uses the default transport, ``ProxyFromEnvironment``: loopback hosts are never
proxied), read once per transport (:func:`env_proxy`), except when a resolver maps the address
(then it is a loopback address on the embedded plane). :data:`REQUESTS_SENT`
counts the requests each kind of transport sent in this process (for ``benchmarks/``).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
import orjson

from rayop.controllers.dashboard.errors import DashboardTimeout, DashboardUnavailable, body_text
from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError, RequestTimeout

__all__ = [
    "DIRECT_TIMEOUT",
    "PROXY_TIMEOUT",
    "REQUESTS_SENT",
    "DashboardRequest",
    "DashboardTransport",
    "DirectTransport",
    "ProxyTransport",
    "ServiceResolver",
    "env_proxy",
]

DIRECT_TIMEOUT = 2.0
"""Seconds per call when talking to the head directly (KubeRay's 2 s)."""
PROXY_TIMEOUT = 10.0
"""Seconds per call through the API server's services proxy (KubeRay's 10 s)."""

REQUESTS_SENT: Counter[str] = Counter()
"""Requests sent by this process's transports, by kind ("direct", "proxy")."""

ServiceResolver = Callable[[str], "str | None"]
"""Maps a direct base URL (``http://<svc>.<ns>.svc.<domain>:<port>``) to the base URL that
really reaches it, or None when nothing answers there (a name that does not resolve)."""


@dataclass(frozen=True, kw_only=True)
class DashboardRequest:
    """One HTTP request to a dashboard port; ``str()`` gives ``"<METHOD> <path>"`` for messages."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    json: Any = None
    """The body, sent as JSON; None sends no body."""
    headers: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    def timed_out(self, timeout: float) -> DashboardTimeout:
        """Returns the error of this request when ``timeout`` seconds passed with no answer."""
        return DashboardTimeout(f"{self}: timed out after {timeout}s")


_PROXY_ENV = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY")


def env_proxy(url: str) -> str | None:
    """Returns the proxy the environment names for ``url`` (``HTTP_PROXY``/``HTTPS_PROXY``,
    lower case too), or None: no proxy set, ``NO_PROXY`` matches, or a loopback host.

    Cheap: the answer is cached for the current values of those variables (reading the whole
    environment, as ``urllib`` does, costs ~1 ms).
    """
    split = urllib.parse.urlsplit(url)
    env = tuple(os.environ.get(name) for name in _PROXY_ENV)
    if not any(env):
        return None
    return _env_proxy(split.scheme or "http", split.hostname or "", env)


@functools.lru_cache(maxsize=1024)
def _env_proxy(scheme: str, host: str, env: tuple[str | None, ...]) -> str | None:
    del env  # part of the cache key only
    if host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    proxy = urllib.request.getproxies_environment().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy


class DashboardTransport(Protocol):
    """Sends one HTTP request to a dashboard port; raises DashboardUnavailable on no answer."""

    timeout: float

    async def send(self, request: DashboardRequest) -> tuple[int, bytes]:
        """Sends the request; returns the status and body (error statuses are returned)."""
        ...

    async def close(self) -> None:
        """Releases connections this transport owns."""
        ...


class DirectTransport:
    """Talks HTTP to ``base_url`` (e.g. ``http://raycluster-head-svc.ns.svc.cluster.local:8265``).

    Args:
        base_url: Scheme, host and port (a path prefix is kept).
        timeout: Seconds for each whole call.
        session: A shared aiohttp session (not closed by :meth:`close`); one is made if None.
        resolver: Maps ``base_url`` to where it really is, at each call (None: DNS does).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = DIRECT_TIMEOUT,
        session: aiohttp.ClientSession | None = None,
        resolver: ServiceResolver | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.resolver = resolver
        self._session = session
        self._owned = session is None
        self._proxy = env_proxy(self.base_url) if resolver is None else None

    def _target(self, request: DashboardRequest) -> str:
        if self.resolver is None:
            return self.base_url
        resolved = self.resolver(self.base_url)
        if resolved is None:
            raise DashboardUnavailable(f"{request}: no address for {self.base_url}")
        return resolved.rstrip("/")

    async def send(self, request: DashboardRequest) -> tuple[int, bytes]:
        """Sends one request; blocks at most ``timeout`` seconds."""
        base = self._target(request)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        REQUESTS_SENT["direct"] += 1
        data = None if request.json is None else orjson.dumps(request.json)
        try:
            async with self._session.request(
                request.method,
                base + request.path,
                params=request.params,
                data=data,
                headers=request.headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                allow_redirects=False,
                proxy=self._proxy,
            ) as resp:
                return resp.status, await resp.read()
        except TimeoutError as exc:
            raise request.timed_out(self.timeout) from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise DashboardUnavailable(f"{request}: {exc}") from exc

    async def close(self) -> None:
        """Closes the session if this transport made it."""
        if self._owned and self._session is not None:
            await self._session.close()
            self._session = None


class ProxyTransport:
    """Talks to a Service port through the API server's services proxy.

    Args:
        kube: The operator's API client (its credentials and throttling apply).
        namespace: The Service's namespace.
        service: The head Service name (``<cluster>-head-svc``).
        port: Port name or number ("dashboard" for 8265, "serve" for 8000).
        timeout: Seconds for each whole call.
    """

    def __init__(
        self,
        kube: KubeClient,
        *,
        namespace: str,
        service: str,
        port: str | int = "dashboard",
        timeout: float = PROXY_TIMEOUT,
    ) -> None:
        self.kube = kube
        self.prefix = f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy"
        self.timeout = timeout

    async def send(self, request: DashboardRequest) -> tuple[int, bytes]:
        """Sends one request through the proxy; blocks at most ``timeout`` seconds."""
        REQUESTS_SENT["proxy"] += 1
        try:
            status, body = await self.kube.request(
                request.method,
                self.prefix + request.path,
                params=request.params,
                json=request.json,
                headers=request.headers,
                timeout=self.timeout,
            )
        except RequestTimeout as exc:
            raise request.timed_out(self.timeout) from exc
        except ApiError as exc:
            raise DashboardUnavailable(f"{request}: {exc}") from exc
        if status >= 400 and _is_kube_status(body):
            # The API server answered for the proxy itself (no endpoints, service missing...).
            raise DashboardUnavailable(
                f"{request}: proxy error {status}", status=status, body=body_text(body)
            )
        return status, body

    async def close(self) -> None:
        """Nothing to release: the KubeClient belongs to the caller."""


def _is_kube_status(body: bytes) -> bool:
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(decoded, dict) and decoded.get("kind") == "Status"
