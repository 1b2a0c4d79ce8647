"""The manager's HTTP endpoints: ``/metrics`` (with ``/debug/decisions``, each object's last
passes), and the ``/healthz`` / ``/readyz`` probes.

Bind addresses follow controller-runtime: ``"host:port"``, ``":port"`` (every interface) or
``"0"`` (the server is disabled). Port 0 picks a free port; :attr:`HttpServer.port` tells which.
A server that cannot bind raises :class:`BindError`, which names the server (``metrics``,
``health probe``, ``webhook``) so that a command can say which of its flags to change.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

Check = Callable[[], bool]
"""A named probe check returns True when healthy; it must not block."""


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """Parses ``"host:port"`` or ``":port"``; returns None for ``"0"`` or ``""`` (disabled).

    Raises:
        ValueError: the address has no valid port.
    """
    if address in ("0", ""):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid bind address {address!r}; want host:port or :port")
    return host.strip("[]") or "0.0.0.0", int(port)


class BindError(OSError):
    """A server could not bind its address (in use, or not an address of this machine).

    An :class:`OSError` with the cause's errno; ``server``, ``host`` and ``port`` say which
    server and which address, ``reason`` what the system said.
    """

    def __init__(self, server: str, host: str, port: int, cause: OSError) -> None:
        self.server = server
        self.host = host
        self.port = port
        self.reason = os.strerror(cause.errno) if cause.errno else str(cause)
        super().__init__(cause.errno, f"{server} server cannot bind {host}:{port}: {self.reason}")


class HttpServer:
    """One aiohttp server on one address; :meth:`start` and :meth:`stop` never block for long.

    With ``ssl_context`` it speaks only TLS (the admission webhook server serves through one).
    ``name`` (``metrics``, ``health probe``, ``webhook``) is what a :class:`BindError` names.
    """

    def __init__(
        self,
        app: web.Application,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        name: str = "http",
    ) -> None:
        self.name = name
        self._app = app
        self._host = host
        self._requested_port = port
        self._ssl_context = ssl_context
        self._runner: web.AppRunner | None = None
        self.port = port
        """The bound port (known after :meth:`start`)."""

    async def start(self) -> None:
        """Binds and starts serving.

        Raises:
            BindError: the address is in use or cannot be bound.
        """
        runner = web.AppRunner(self._app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._requested_port, ssl_context=self._ssl_context)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise BindError(self.name, self._host, self._requested_port, exc) from exc
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        for sock in getattr(site._server, "sockets", None) or ():
            self.port = int(sock.getsockname()[1])
            break

    async def stop(self) -> None:
        """Stops serving and closes the listening socket."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


Explain = Callable[[str, str, str | None], list[dict[str, Any]]]
"""``(namespace, name, kind or None) -> passes``: an object's account, JSON-ready."""


def metrics_app(render: Callable[[], bytes], explain: Explain | None = None) -> web.Application:
    """Builds the app serving ``GET /metrics`` with whatever ``render`` returns and, given
    ``explain``, ``GET /debug/decisions?namespace=&name=&kind=`` with an object's last passes
    as JSON (``{"passes": [...]}``; 400 without a name)."""

    async def metrics(_request: web.Request) -> web.Response:
        response = web.Response(body=render())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    if explain is not None:
        account = explain

        async def decisions(request: web.Request) -> web.Response:
            query = request.query
            name = query.get("name", "")
            if not name:
                return web.json_response({"error": "the query needs name="}, status=400)
            passes = account(query.get("namespace", ""), name, query.get("kind") or None)
            return web.json_response({"passes": passes})

        app.router.add_get("/debug/decisions", decisions)
    return app


def health_app(
    healthz: Iterable[tuple[str, Check]], readyz: Iterable[tuple[str, Check]]
) -> web.Application:
    """Builds the app serving ``/healthz`` and ``/readyz``: 200 when every check passes, else 500."""

    def handler(checks: list[tuple[str, Check]]) -> Callable[[web.Request], object]:
        async def probe(request: web.Request) -> web.Response:
            results = [(name, _safe(check)) for name, check in checks]
            ok = all(passed for _, passed in results)
            if "verbose" in request.query or not ok:
                lines = [f"[{'+' if p else '-'}]{n} {'ok' if p else 'failed'}" for n, p in results]
                text = "\n".join([*lines, "healthz check passed" if ok else "check failed"])
            else:
                text = "ok"
            return web.Response(text=text, status=200 if ok else 500)

        return probe

    app = web.Application()
    app.router.add_get("/healthz", handler(list(healthz)))  # type: ignore[arg-type]
    app.router.add_get("/readyz", handler(list(readyz)))  # type: ignore[arg-type]
    return app


def _safe(check: Check) -> bool:
    try:
        return bool(check())
    except Exception:
        return False
