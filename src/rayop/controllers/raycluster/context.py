"""What every RayCluster reconcile step works with: its dependencies and a per-pass context.

:class:`ReconcilerDeps` is built once per controller (client, caches, expectations, recorder,
settings, clock). :class:`PassContext` is opened once per reconcile pass by
:meth:`PassContext.open` (the shape every controller's pass has:
:mod:`rayop.controllers.kit.pass_context`): the wall time of the pass, the RayCluster as read from the informer cache (frozen; what status and
finalizer writes start from, so unknown fields survive), the same object parsed once into a
:class:`~rayop.api.raycluster.RayCluster` (every spec read goes through it), and helpers that
read the pod and service caches restricted to objects this operator owns (label
``ray.io/cluster`` and a controller ownerReference to this RayCluster's uid), so nothing else is
ever counted or deleted.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rayop.api import keys
from rayop.api.raycluster import RayCluster
from rayop.api.validation import Problem, parse_raycluster
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, settings
from rayop.controllers.raycluster.group_creates import GroupCreates
from rayop.controllers.raycluster.spec_hash import spec_hash
from rayop.kube.client import KubeClient
from rayop.runtime.clock import Clock
from rayop.runtime.events.recorder import EventRecorder, EventType
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.informers.factory import Informer, InformerFactory
from rayop.runtime.informers.frozen import thaw
from rayop.runtime.informers.indexer import OWNER_UID_INDEX
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.runtime.unchanged_passes import UnchangedPasses


class UnparsedClusterError(RuntimeError):
    """A step read the parsed spec of a RayCluster that did not parse (the validate step ends
    such a pass before any step that reads the spec)."""


@dataclass(frozen=True, kw_only=True)
class ReconcilerDeps:
    """Everything a reconcile step may use besides the object itself."""

    client: KubeClient
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
    """Monotonic time (expectations, own writes) and wall time (status and deletion timestamps)."""
    pod_call_concurrency: int = settings.POD_CALL_CONCURRENCY
    rng: random.Random = field(default_factory=random.Random)
    group_creates: GroupCreates | None = None
    """Runs a big worker group's creates outside the pass (``group_creates``); None: every
    create is made in the pass."""
    unchanged: UnchangedPasses[Request] | None = None
    """Answers a periodic pass that could only repeat the cluster's last one without running
    it (:mod:`rayop.runtime.unchanged_passes`); None: every pass runs."""
    refusing_namespaces: set[str] = field(default_factory=set)
    """Namespaces whose last pod create was answered 403 Forbidden (terminating, quota, policy):
    worker creates there go one at a time and stop at the first failure, as KubeRay's, until a
    pod create there succeeds (``pod_sync``)."""


@dataclass(kw_only=True)
class PassContext:
    """One reconcile pass over one RayCluster.

    Attributes:
        request: The request being reconciled.
        deps: The reconciler's dependencies.
        cached: The RayCluster as the informer cache holds it (read-only).
        parsed: ``cached`` as a model; None when it does not parse (``problems`` says why).
        problems: Why ``cached`` did not parse, one line per field (empty when it did).
        now: The wall time of the pass (the injected clock's, read once when it opened).
    """

    request: Request
    deps: ReconcilerDeps
    cached: Obj
    parsed: RayCluster | None
    problems: list[Problem] = field(default_factory=list)
    now: datetime
    _pods_read: tuple[int, list[Obj]] | None = field(default=None, init=False, repr=False)
    """The pod cache's change count at the last :meth:`cluster_pods` and what it returned."""

    @property
    def rc(self) -> RayCluster:
        """The parsed RayCluster (every step after validation may use it).

        Raises:
            UnparsedClusterError: the cached object did not parse.
        """
        if self.parsed is None:
            raise UnparsedClusterError(f"RayCluster {self.request} did not parse")
        return self.parsed

    @functools.cached_property
    def namespace(self) -> str:
        """The RayCluster's namespace."""
        return cs.namespace(self.cached)

    @functools.cached_property
    def name(self) -> str:
        """The RayCluster's name."""
        return cs.name(self.cached)

    @functools.cached_property
    def uid(self) -> str:
        """The RayCluster's uid (what owned objects point at)."""
        return str(cs.meta(self.cached).get("uid") or "")

    def spec_hash(self) -> str:
        """Returns the hash of the cached wire spec behind ``upgradeStrategy: Recreate``."""
        return spec_hash(self.cached)

    def _owned(self, informer: Informer) -> list[Obj]:
        if not self.uid:
            return []
        return [
            o
            for o in informer.by_index(OWNER_UID_INDEX, self.uid)
            if cs.labels_of(o).get(keys.RAY_CLUSTER) == self.name
        ]

    def cluster_pods(self) -> list[Obj]:
        """Returns the cached head and worker pods this operator created for the cluster.

        A pass reads them in several steps (the upgrade check, the head, each group, the
        status); while the pod cache has not changed since the last read, that read's pods are
        returned again instead of being looked up and decoded anew.
        """
        changes = self.deps.pods.changes
        if self._pods_read is not None and self._pods_read[0] == changes:
            return list(self._pods_read[1])
        pods = [
            p
            for p in self._owned(self.deps.pods)
            if cs.labels_of(p).get(keys.RAY_NODE_TYPE) in (labels.HEAD, labels.WORKER)
        ]
        self._pods_read = (changes, pods)
        return list(pods)

    def head_pods(self) -> list[Obj]:
        """Returns the cached head pods of the cluster (normally one)."""
        return [
            p for p in self.cluster_pods() if cs.labels_of(p).get(keys.RAY_NODE_TYPE) == labels.HEAD
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

    @classmethod
    def open(cls, request: Request, deps: ReconcilerDeps, cached: Obj) -> PassContext:
        """Returns the context of one pass over ``cached``, parsing it once; never blocks."""
        parsed, problems = parse_raycluster(cached)
        return cls(
            request=request,
            deps=deps,
            cached=cached,
            parsed=parsed,
            problems=problems,
            now=deps.clock.wall(),
        )

    def event(
        self, event_type: EventType, reason: str, note: str, *, action: str | None = None
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
        obj: dict[str, Any] = thaw(self.cached)
        obj.setdefault("apiVersion", "ray.io/v1")
        obj.setdefault("kind", "RayCluster")
        return obj
