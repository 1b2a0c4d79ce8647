"""The embedded control plane for tests: started in-process, rayop's CRDs installed, a user client.

Usage::

    async with open_control_plane() as plane:
        await plane.create(RAY_CLUSTERS, raycluster, "demo")
        plane.stored(RAY_CLUSTERS, "demo", "raycluster-kuberay")  # the store, no API traffic

:func:`open_control_plane` owns the plane and the user client: both stop when the block exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from rayop.api.crds import build_crds
from rayop.apimachinery.objects import Obj
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig, load_config
from rayop.kube.errors import AlreadyExists, Conflict, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import (
    CRDS,
    EVENTS,
    NAMESPACES,
    PODS,
    RAY_CLUSTERS,
    RAY_JOBS,
    RAY_SERVICES,
)
from rayop.sim.apiserver.faults import Faults
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.dashboard.head import DashboardConfig
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing.readiness import ray_node_pods, raycluster_converged
from rayop.testing.waiting import eventually

FAST_KUBELET = KubeletConfig(
    pending_delay=0.02, running_delay=0.05, ready_delay=0.05, delete_delay=0.05, seed=7
)
"""A simulated kubelet that takes a pod to Running and Ready in about a tenth of a second."""

RAY_KINDS = (RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES)
"""The kinds whose CRDs :func:`install_crds` installs."""


@dataclass
class PlaneUnderTest:
    """A running embedded control plane, its client configuration, and a user's client.

    Store views (:meth:`stored`, :meth:`objects`, :meth:`events`) read the plane's store
    directly, with no API traffic and no cache lag; user actions (:meth:`namespace`,
    :meth:`create`, :meth:`edit`) go through the HTTP API like ``kubectl``.

    Attributes:
        cp: The plane itself (faults, audit, dashboards, kubelet hooks).
        config: A client configuration for the plane (the admin token).
        client: The user's client (no client-side throttling), closed with the plane.
    """

    cp: EmbeddedControlPlane
    config: KubeConfig
    client: KubeClient
    namespaces: set[str] = field(default_factory=set)

    def new_client(self, **kwargs: Any) -> KubeClient:
        """Returns a new (unopened) client for the plane; the caller closes it."""
        return KubeClient(self.config, **kwargs)

    # -- store views -------------------------------------------------------------------------

    def stored(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        """Returns the stored object, or None when there is none."""
        return self.cp.store.peek(self._info(resource), namespace, name)

    def objects(self, resource: Resource, namespace: str) -> list[Obj]:
        """Returns the stored objects of a kind in a namespace."""
        return list(self.cp.store.iter_objects(self._info(resource), namespace))

    def events(self, namespace: str, reason: str | None = None) -> list[Obj]:
        """Returns the stored Events of a namespace (optionally of one reason), each in
        events.k8s.io form (``regarding``, ``note``) whichever form the store keeps."""
        found = []
        for stored in self.objects(EVENTS, namespace):
            if reason is not None and stored.get("reason") != reason:
                continue
            event = dict(stored)
            event["regarding"] = stored.get("regarding") or stored.get("involvedObject") or {}
            event["note"] = stored.get("note") or stored.get("message")
            found.append(event)
        return found

    def ray_pods(self, namespace: str, cluster: str, *, live_only: bool = True) -> list[Obj]:
        """Returns the stored head and worker pods of a RayCluster (not terminating ones,
        unless ``live_only`` is False)."""
        pods = ray_node_pods(self.objects(PODS, namespace), cluster, live_only=live_only)
        return [dict(p) for p in pods]

    def raycluster_converged(self, namespace: str, name: str) -> bool:
        """Tells whether the stored RayCluster is ready as KubeRay reports it, all pods ready
        (see :func:`~rayop.testing.readiness.raycluster_converged`)."""
        raycluster = self.stored(RAY_CLUSTERS, namespace, name)
        return raycluster_converged(raycluster, self.ray_pods(namespace, name))

    def _info(self, resource: Resource) -> Any:
        info = self.cp.store.resources.get(resource.group, resource.version, resource.plural)
        assert info is not None, f"{resource} is not served"
        return info

    # -- user actions over HTTP --------------------------------------------------------------

    async def namespace(self, name: str) -> str:
        """Creates a namespace unless this handle already did (or it is "default"); returns it."""
        if name not in self.namespaces and name != "default":
            await self.client.create(NAMESPACES, {"metadata": {"name": name}})
            self.namespaces.add(name)
        return name

    async def create(self, resource: Resource, obj: Obj, namespace: str) -> Obj:
        """Creates a copy of ``obj`` in ``namespace`` (made first if need be); returns it."""
        await self.namespace(namespace)
        body = copy.deepcopy(obj)
        body["metadata"]["namespace"] = namespace
        return await self.client.create(resource, body, namespace=namespace)

    async def edit(
        self, resource: Resource, namespace: str, name: str, mutate: Callable[[Obj], None]
    ) -> Obj:
        """Reads an object, applies ``mutate`` to it and writes it back, again on a conflict.

        Raises:
            AssertionError: fifty attempts in a row met a conflict.
        """
        for _ in range(50):
            obj = await self.client.get(resource, name, namespace=namespace)
            mutate(obj)
            try:
                return await self.client.update(resource, obj)
            except Conflict:
                await asyncio.sleep(0.02)
        raise AssertionError(f"could not update {resource} {namespace}/{name}: conflicts")


async def install_crds(client: KubeClient, *, timeout: float = 10.0) -> None:
    """Creates rayop's four CRDs (keeping those that exist); blocks until RAY_KINDS are served.

    Raises:
        AssertionError: a kind was not served within ``timeout`` seconds.
    """
    for crd in build_crds():
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)

    async def served() -> bool:
        try:
            for resource in RAY_KINDS:
                await client.list(resource, namespace="default", limit=1)
        except NotFound:
            return False
        return True

    await eventually(served, timeout=timeout, what="the ray.io kinds served")


async def plane_config(cp: EmbeddedControlPlane) -> KubeConfig:
    """Returns a client configuration for a running plane (its admin token, its CA over TLS)."""
    if cp.url.startswith("https"):
        return await load_config(kubeconfig=cp.kubeconfig_path)
    return KubeConfig.for_server(cp.url, token=cp.token)


@contextlib.asynccontextmanager
async def open_control_plane(
    *,
    kubelet: KubeletConfig = FAST_KUBELET,
    dashboard: DashboardConfig | None = None,
    faults: Faults | None = None,
    crds: bool = True,
    **plane_options: Any,
) -> AsyncIterator[PlaneUnderTest]:
    """Starts an embedded control plane with rayop's CRDs; stops it when the block exits.

    Blocks until the plane serves requests (and the ray.io kinds, when ``crds``).

    Args:
        kubelet: The simulated kubelet's timings (fast by default).
        dashboard: The simulated Ray dashboards' timings (the plane's defaults when None).
        faults: Fault-injection knobs (mutable while running, also as ``plane.cp.faults``).
        crds: Install rayop's CRDs.
        **plane_options: Passed on to :class:`~rayop.sim.controlplane.EmbeddedControlPlane`.

    Yields:
        The running plane with a user client.
    """
    async with EmbeddedControlPlane(
        kubelet=kubelet, dashboard=dashboard, faults=faults, **plane_options
    ) as cp:
        config = await plane_config(cp)
        async with KubeClient(config, qps=-1) as user:
            if crds:
                await install_crds(user)
            yield PlaneUnderTest(cp, config, user)
