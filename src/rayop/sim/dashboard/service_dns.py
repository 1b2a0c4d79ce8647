"""Cluster DNS for the operator on the embedded control plane: service URLs to simulated heads.

KubeRay (and rayop, by default) reaches a Ray dashboard directly at
``http://<service>.<namespace>.svc.<cluster domain>:<port>``. Those names resolve only inside a
cluster; the embedded plane's heads are :class:`~rayop.sim.dashboard.head.SimDashboard` objects
behind one loopback HTTP server. :class:`ServiceDns` plays the cluster's DNS and Service routing
for such a URL: it finds the Service, its ready head and the port's kind (the same lookup the
API server's services proxy does, :meth:`DashboardRegistry.resolve`) and returns the head's base
URL, or None when the name does not resolve. The operator calls it through its dashboard
transport (a ``ServiceResolver``); no API server request is made.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["ServiceDns", "split_service_url"]

Resolve = Callable[[str, str, str], "str | None"]
"""``(namespace, service, port) -> base URL or None``, e.g. ``DashboardRegistry.resolve``."""


def split_service_url(url: str) -> tuple[str, str, str] | None:
    """Returns ``(namespace, service, port)`` of ``http://<svc>.<ns>.svc[.<domain>]:<port>``, or
    None when the host is not a Service's cluster DNS name."""
    parts = urlsplit(url)
    labels = (parts.hostname or "").split(".")
    if len(labels) < 3 or labels[2] != "svc" or not labels[0] or not labels[1]:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return labels[1], labels[0], str(port)


class ServiceDns:
    """Maps direct service URLs to the embedded plane's simulated heads.

    Args:
        resolve: The plane's Service lookup (``cp.dashboards.resolve``).
    """

    def __init__(self, resolve: Resolve) -> None:
        self._resolve = resolve

    def __call__(self, url: str) -> str | None:
        """Returns the base URL that serves ``url``, or None when nothing does."""
        split = split_service_url(url)
        if split is None:
            return None
        base = self._resolve(*split)
        if base is None:
            return None
        path = urlsplit(url).path.rstrip("/")
        return base.rstrip("/") + path
