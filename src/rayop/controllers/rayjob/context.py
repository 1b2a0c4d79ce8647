"""What the RayJob phases work with: per-controller dependencies and the per-pass context.

:class:`RayJobDeps` is built once by :func:`~rayop.controllers.rayjob.setup.setup_rayjob_controller`
(client, informer caches, event recorder, settings, the dashboard client factory, the wall clock
and the random source of generated names). :class:`PassContext` is built once per reconcile
pass: the RayJob as read (a private mutable copy), its parsed spec, the status being edited and
the status as read, and the time of the pass.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from rayop.api.rayjob import RayJob, RayJobStatus
from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.dashboard.client import DashboardClient
from rayop.controllers.rayjob.cluster import head_service_name
from rayop.controllers.rayjob.submitter import SubmitterOutcome
from rayop.kube.client import KubeClient
from rayop.runtime.events import EventRecorder, EventType
from rayop.runtime.reconcile import Request

Obj = Mapping[str, Any]


class Cache(Protocol):
    """The read side of an informer cache (never blocks)."""

    def get(self, namespace: str | None, name: str) -> Obj | None: ...

    def list(
        self, namespace: str | None = None, *, label_selector: Any = None
    ) -> builtins.list[Obj]: ...


DashboardFactory = Callable[[Obj, str, "str | None"], DashboardClient]
"""Builds a dashboard client for (cluster, ``status.dashboardURL``, auth token)."""


def dashboard_factory(client: KubeClient, *, use_kubernetes_proxy: bool) -> DashboardFactory:
    """Returns the factory KubeRay's ``--use-kubernetes-proxy`` selects.

    Through the proxy the client reaches ``<head svc>:dashboard`` via the API server (10 s per
    call); directly it calls ``http://<dashboardURL>`` (2 s per call).
    """

    def make(cluster: Obj, url: str, token: str | None) -> DashboardClient:
        if use_kubernetes_proxy:
            namespace = str((cluster.get("metadata") or {}).get("namespace", ""))
            return DashboardClient.via_proxy(
                client, namespace=namespace, service=head_service_name(cluster), token=token
            )
        return DashboardClient.direct(f"http://{url}", token=token)

    return make


def utc_now() -> datetime:
    """Returns the wall-clock time (UTC); the default clock of status timestamps."""
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True)
class RayJobDeps:
    """Everything a pass needs besides the RayJob itself."""

    client: KubeClient
    rayjobs: Cache
    clusters: Cache
    jobs: Cache
    services: Cache
    pods: Cache
    secrets: Cache
    recorder: EventRecorder
    options: OperatorOptions
    dashboards: DashboardFactory
    wall_clock: Callable[[], datetime] = utc_now
    """Wall-clock time for status timestamps, deadlines and TTLs."""
    rng: random.Random = field(default_factory=random.Random)
    """Random source of generated job ids and cluster names."""


@dataclass(kw_only=True)
class PassContext:
    """One reconcile pass over one RayJob.

    Attributes:
        deps: The controller's dependencies.
        request: The request being reconciled.
        rayjob: A private mutable copy of the RayJob's wire form (updated after own writes).
        job: The parsed RayJob (read its spec here).
        status: The status being edited by this pass.
        original: The status as read; the write happens only if they differ where it matters.
        now: The wall-clock time of the pass.
        submitter: What the submitter reported this pass (K8sJobMode, SidecarMode).
    """

    deps: RayJobDeps
    request: Request
    rayjob: dict[str, Any]
    job: RayJob
    status: RayJobStatus
    original: RayJobStatus
    now: datetime
    submitter: SubmitterOutcome = field(default_factory=SubmitterOutcome)

    @property
    def namespace(self) -> str:
        """The RayJob's namespace."""
        return self.request.namespace

    @property
    def name(self) -> str:
        """The RayJob's name."""
        return self.request.name

    def event(self, event_type: EventType, reason: str, note: str) -> None:
        """Records an Event about the RayJob; never blocks."""
        self.deps.recorder.event(self.rayjob, event_type, reason, note)
