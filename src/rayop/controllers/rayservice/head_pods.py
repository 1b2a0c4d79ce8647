"""Reads a RayCluster's head pod from the cache and talks to its dashboard or Serve proxy."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.dashboard.client import DashboardClient
from rayop.controllers.kit import labels as rc_labels
from rayop.controllers.kit import names
from rayop.controllers.kit.auth_token import read_auth_token
from rayop.controllers.raycluster.builders import DEFAULT_PORTS, service_ports
from rayop.controllers.rayservice.context import PassContext


def head_pod(ctx: PassContext, cluster_name: str) -> Obj | None:
    """Returns the cluster's live head pod from the pod cache, or None."""
    selector = rc_labels.head_pods_selector(cluster_name)
    pods = [
        p
        for p in ctx.deps.pods.list(ctx.namespace, label_selector=selector)
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    ]
    return pods[0] if pods else None


def is_pod_ready(pod: Obj | None) -> bool:
    """Tells whether a pod is Running with condition Ready=True."""
    if pod is None:
        return False
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return status.get("phase") == "Running" and ready


@contextlib.asynccontextmanager
async def dashboard(
    ctx: PassContext, cluster: Obj, port_name: str = "dashboard"
) -> AsyncIterator[DashboardClient]:
    """Opens a client for the cluster's head service port ("dashboard" or "serve"); closes it on
    exit.

    The dashboard port's client carries the cluster's Ray auth token (``authOptions.mode:
    token``), read as the RayJob's client reads it; the Serve proxy takes no token. Blocks on
    the API only when the token Secret is not cached yet.
    """
    token = None
    if port_name == "dashboard":
        token = await read_auth_token(cluster, secrets=ctx.deps.secrets, client=ctx.deps.client)
    port = service_ports(cluster).get(port_name, DEFAULT_PORTS.get(port_name, 0))
    client = ctx.deps.dashboards.client(
        namespace=ctx.namespace,
        service=names.head_service_name(cluster),
        port_name=port_name,
        port=port,
        token=token,
    )
    async with client:
        yield client
