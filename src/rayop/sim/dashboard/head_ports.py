"""A simulated head's ports as TCP listeners: what ``pods/portforward`` dials on the plane.

A forwarded connection carries raw bytes, so the simulated dashboard must answer on a port of
its own with its paths at the root, as a real head's dashboard (8265), Serve proxy (8000) and
agent (52365) do. :class:`HeadPorts` opens one loopback listener per (head pod, port kind) on
first use, all served by one aiohttp runner whose handler finds the head by the port the
connection arrived on and hands the request to
:meth:`~rayop.sim.dashboard.registry.DashboardRegistry.serve`. A port nothing listens on in a
simulated head (Ray's client server 10001, GCS 6379, a worker's ports, Serve before it runs, a
head that is not ready) refuses the dial with ``ECONNREFUSED``, which the port-forward handler
reports in the kubelet's words.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket

from aiohttp import web

from rayop.sim.dashboard.registry import PORT_KINDS, DashboardRegistry

__all__ = ["HeadPorts"]


def _refused() -> ConnectionRefusedError:
    return ConnectionRefusedError(errno.ECONNREFUSED, os.strerror(errno.ECONNREFUSED))


class HeadPorts:
    """Loopback listeners for the simulated heads' ports (see the module docstring).

    Args:
        dashboards: The plane's simulated dashboards.
        host: The loopback address the listeners bind.
    """

    def __init__(self, dashboards: DashboardRegistry, host: str = "127.0.0.1") -> None:
        self._dashboards = dashboards
        self._host = host
        self._runner: web.AppRunner | None = None
        self._sites: dict[tuple[str, str], int] = {}
        self._by_port: dict[int, tuple[str, str]] = {}
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        """Closes every listener; blocks until done."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._sites.clear()
        self._by_port.clear()

    async def dial(
        self, namespace: str, pod_uid: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connects to ``port`` of a head pod.

        Raises:
            ConnectionRefusedError: Nothing listens there in the simulated pod.
        """
        kind = PORT_KINDS.get(str(port))
        if kind is None or not self._dashboards.listening(namespace, pod_uid, kind):
            raise _refused()
        listener = await self._listener(pod_uid, kind)
        return await asyncio.open_connection(self._host, listener)

    async def _listener(self, pod_uid: str, kind: str) -> int:
        async with self._lock:
            known = self._sites.get((pod_uid, kind))
            if known is not None:
                return known
            if self._runner is None:
                app = web.Application()
                app.router.add_route("*", "/{tail:.*}", self._handle)
                self._runner = web.AppRunner(
                    app, handle_signals=False, access_log=None, shutdown_timeout=0.2
                )
                await self._runner.setup()
            sock = socket.create_server((self._host, 0))
            port = int(sock.getsockname()[1])
            await web.SockSite(self._runner, sock).start()
            self._sites[(pod_uid, kind)] = port
            self._by_port[port] = (pod_uid, kind)
            return port

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        target = self._by_port.get(int(sockname[1])) if sockname else None
        if target is None:
            raise web.HTTPNotFound()
        uid, kind = target
        return await self._dashboards.serve(uid, kind, request.match_info["tail"], request)
