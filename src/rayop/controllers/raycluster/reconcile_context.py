"""What every RayCluster reconcile step works with: its dependencies and a per-pass context.

:class:`ReconcilerDeps` is built once per controller (client, caches, expectations, recorder,
settings). :class:`ReconcileContext` is built once per reconcile pass: the RayCluster as read from
the informer cache (frozen) plus a mutable working copy, and helpers that read the pod and
service caches restricted to objects this operator owns (label ``ray.io/cluster`` and a
controller ownerReference to this RayCluster's uid), so nothing else is ever counted or deleted.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from rayop.api import keys
from rayop.controllers.common import cluster_spec as cs
from rayop.controllers.common import labels, settings
from rayop.controllers.common.options import OperatorOptions
from rayop.kube.resource import Resource
from rayop.runtime.clock import Clock
from rayop.runtime.events import EventRecorder
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.indexer import OWNER_UID_INDEX
from rayop.runtime.informer_factory import Informer, InformerFactory
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request

Obj = Mapping[str, Any]



class ClusterClient(Protocol):
    """The API verbs the RayCluster reconciler uses (:class:`rayop.kube.client.KubeClient`)."""

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Any,
        *,
        namespace: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]: ...

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, kw_only=True)
class ReconcilerDeps:
    """Everything a reconcile step may use besides the object itself."""

    client: ClusterClient
    clusters: Informer
    pods: Informer
    services: Informer
    informers: InformerFactory
    """For caches of kinds read only in some clusters (ServiceAccounts, Ingresses, Secrets, Jobs)."""
    recorder: EventRecorder
    expectations: ScaleExpectations
    own_writes: OwnWrites
    """The status writes whose result the RayCluster cache has not shown yet."""
    options: OperatorOptions
    clock: Clock
    pod_call_concurrency: int = settings.POD_CALL_CONCURRENCY
    rng: random.Random = field(default_factory=random.Random)
    wall_clock: Callable[[], datetime] | None = None
    """Optional ``() -> datetime`` for status timestamps (UTC now when None)."""


@dataclass(kw_only=True)
class ReconcileContext:
    """One reconcile pass over one RayCluster.

    Attributes:
        request: The request being reconciled.
        deps: The reconciler's dependencies.
        cached: The RayCluster as the informer cache holds it (read-only).
        cluster: A mutable working copy (defaults applied); never written back as a whole.
    """

    request: Request
    deps: ReconcilerDeps
    cached: Obj
    cluster: dict[str, Any]

    @property
    def namespace(self) -> str:
        """The RayCluster's namespace."""
        return cs.namespace(self.cached)

    @property
    def name(self) -> str:
        """The RayCluster's name."""
        return cs.name(self.cached)

    @property
    def uid(self) -> str:
        """The RayCluster's uid (what owned objects point at)."""
        return str(cs.meta(self.cached).get("uid") or "")

    def now(self) -> datetime:
        """Returns the current wall-clock time (UTC)."""
        wall = self.deps.wall_clock
        return wall() if wall is not None else datetime.now(UTC)

    def _owned(self, informer: Informer) -> list[Obj]:
        if not self.uid:
            return []
        return [
            o
            for o in informer.by_index(OWNER_UID_INDEX, self.uid)
            if cs.labels_of(o).get(keys.RAY_CLUSTER) == self.name
        ]

    def cluster_pods(self) -> list[Obj]:
        """Returns the cached head and worker pods this operator created for the cluster."""
        return [
            p
            for p in self._owned(self.deps.pods)
            if cs.labels_of(p).get(keys.RAY_NODE_TYPE) in (labels.HEAD, labels.WORKER)
        ]

    def head_pods(self) -> list[Obj]:
        """Returns the cached head pods of the cluster (normally one)."""
        return [
            p
            for p in self.cluster_pods()
            if cs.labels_of(p).get(keys.RAY_NODE_TYPE) == labels.HEAD
        ]

    def group_pods(self, group_name: str) -> list[Obj]:
        """Returns the cached worker pods of one group, oldest first."""
        pods = [
            p
            for p in self.cluster_pods()
            if cs.labels_of(p).get(keys.RAY_NODE_TYPE) == labels.WORKER
            and cs.labels_of(p).get(keys.RAY_GROUP) == group_name
        ]
        return sorted(
            pods, key=lambda p: (str(cs.meta(p).get("creationTimestamp", "")), cs.name(p))
        )

    def owned_services(self) -> list[Obj]:
        """Returns the cached services this operator created for the cluster."""
        return self._owned(self.deps.services)

    def event(
        self, event_type: Literal["Normal", "Warning"], reason: str, note: str, action: str
    ) -> None:
        """Records an Event about the RayCluster; never blocks."""
        self.deps.recorder.event(self.reference(), event_type, reason, note, action=action)

    def reference(self) -> dict[str, Any]:
        """Returns the RayCluster as the object events are about."""
        return {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": self.cached.get("metadata") or {},
        }

    def copy_cached(self) -> dict[str, Any]:
        """Returns a mutable deep copy of the cached RayCluster (for update/update_status)."""
        obj: dict[str, Any] = copy.deepcopy(dict(self.cached))
        obj.setdefault("apiVersion", "ray.io/v1")
        obj.setdefault("kind", "RayCluster")
        return obj
