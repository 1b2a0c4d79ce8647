"""What every RayService reconcile step works with: dependencies and a per-pass context.

:class:`RayServiceDeps` is built once per controller (client, caches, the own-writes tracker,
the clock). :class:`PassContext` is built once per pass: the RayService as the cache holds it
(raw, for what is written back and for ``rayClusterConfig``, which is copied into clusters and
hashed exactly as the user wrote it), the same object parsed once into the typed
:class:`~rayop.api.rayservice.RayService` (for reading the spec, with its defaults), a working
copy of ``status`` that steps edit and the status step writes, and what the steps learned along
the way (application statuses, which clusters serve, when the next retired cluster is due).
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rayop.api.rayservice import RayService, RayServiceSpec
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayservice.dashboards import DashboardFactory
from rayop.controllers.rayservice.incremental.state import RouteState
from rayop.controllers.rayservice.serve_cache import ServeConfigCache
from rayop.controllers.rayservice.settings import ORIGINATED_FROM_CR_NAME, ORIGINATED_FROM_CRD
from rayop.kube.client import KubeClient
from rayop.runtime.clock import Clock
from rayop.runtime.events.recorder import EventRecorder, EventType
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.informers.factory import Informer
from rayop.runtime.informers.indexer import controller_owner
from rayop.runtime.informers.on_demand import OnDemandCache
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request


@dataclass(frozen=True, kw_only=True)
class RayServiceDeps:
    """Everything a reconcile step may use besides the RayService itself."""

    client: KubeClient
    rayservices: Informer
    clusters: Informer
    services: Informer
    pods: Informer
    endpoint_slices: OnDemandCache
    """Made on the first read, as controller-runtime's cache does: an operator with no
    RayService to serve holds no EndpointSlice."""
    secrets: CacheReader
    """The Ray auth token Secrets (read for the dashboard client of a token-auth cluster)."""
    recorder: EventRecorder
    options: OperatorOptions
    dashboards: DashboardFactory
    serve_cache: ServeConfigCache
    own_writes: OwnWrites
    """The RayService writes (status, finalizers) the RayService cache has not shown yet."""
    clock: Clock
    """Monotonic time for requeues; wall time for status timestamps and deletion schedules."""
    rng: random.Random = field(default_factory=random.Random)


@dataclass(kw_only=True)
class PassContext:
    """One reconcile pass over one RayService.

    Attributes:
        request: The request being reconciled.
        deps: The reconciler's dependencies.
        cached: The RayService as last read or written (replaced after each status write).
        service: ``cached`` parsed at the start of the pass (read the spec from here).
        status: Working copy of ``status`` (wire JSON); the status step writes it.
        apps: Serve applications read this pass, by cluster name (wire ``applicationStatuses``).
        ready_clusters: Clusters whose head is ready and whose applications are all RUNNING.
        next_deletion_in: Seconds until the next retired cluster is due, if any.
        serving_cluster: The cluster the serve service selects after this pass ("" if none).
        services_reconciled: Whether the Services were pointed at a ready cluster this pass.
        routes: The Gateway and HTTPRoute of an incremental upgrade (None for other
            strategies).
        now: The wall time of the pass (the injected clock's, read once when it opened).
    """

    request: Request
    deps: RayServiceDeps
    cached: Obj
    service: RayService
    status: dict[str, Any]
    apps: dict[str, dict[str, Any]] = field(default_factory=dict)
    ready_clusters: set[str] = field(default_factory=set)
    next_deletion_in: float | None = None
    serving_cluster: str = ""
    services_reconciled: bool = False
    routes: RouteState | None = None
    now: datetime

    @classmethod
    def open(cls, request: Request, deps: RayServiceDeps, cached: Obj) -> PassContext:
        """Returns the context of a pass over ``cached``.

        Raises:
            pydantic.ValidationError: ``cached`` does not parse (the CRD schema admits only
                objects that do).
        """
        status = copy.deepcopy(dict(cached.get("status") or {}))
        service = RayService.model_validate(cached)
        return cls(
            request=request,
            deps=deps,
            cached=cached,
            service=service,
            status=status,
            now=deps.clock.wall(),
        )

    @property
    def namespace(self) -> str:
        """The RayService's namespace."""
        return self.service.namespace

    @property
    def name(self) -> str:
        """The RayService's name."""
        return self.service.name

    @property
    def spec(self) -> RayServiceSpec:
        """The RayService's spec, typed (as parsed at the start of the pass)."""
        return self.service.spec

    @property
    def generation(self) -> int:
        """The RayService's ``metadata.generation`` (what conditions record as observed)."""
        return int(self.service.metadata.get("generation") or 0)

    @property
    def active_name(self) -> str:
        """The active cluster's name from the working status ("" when none)."""
        return str((self.status.get("activeServiceStatus") or {}).get("rayClusterName") or "")

    @property
    def pending_name(self) -> str:
        """The pending cluster's name from the working status ("" when none)."""
        return str((self.status.get("pendingServiceStatus") or {}).get("rayClusterName") or "")

    def set_cluster_name(self, which: str, cluster_name: str) -> None:
        """Sets ``activeServiceStatus``/``pendingServiceStatus`` to a bare entry for a cluster.

        Args:
            which: ``"activeServiceStatus"`` or ``"pendingServiceStatus"``.
            cluster_name: The cluster's name; "" clears the entry.
        """
        self.status[which] = {"rayClusterName": cluster_name} if cluster_name else {}

    def owned_clusters(self) -> list[Obj]:
        """Returns the cached RayClusters this RayService created.

        KubeRay selects them by the originated-from labels alone; rayop also requires a
        controller ownerReference to this RayService's uid, so a cluster someone else labelled
        so is never retired or deleted.
        """
        selector = {ORIGINATED_FROM_CR_NAME: self.name, ORIGINATED_FROM_CRD: "RayService"}
        uid = self.service.metadata.get("uid")
        return [
            cluster
            for cluster in self.deps.clusters.list(self.namespace, label_selector=selector)
            if uid and (controller_owner(cluster) or {}).get("uid") == uid
        ]

    def cluster(self, cluster_name: str) -> Obj | None:
        """Returns a cached RayCluster of this namespace, or None."""
        if not cluster_name:
            return None
        return self.deps.clusters.get(self.namespace, cluster_name)

    def event(
        self, event_type: EventType, reason: str, note: str, *, action: str | None = None
    ) -> None:
        """Records an Event about the RayService (``action`` defaults to ``reason``); never
        blocks."""
        self.deps.recorder.event(self.cached, event_type, reason, note, action=action)
