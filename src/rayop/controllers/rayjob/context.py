"""What the RayJob phases work with: per-controller dependencies and the per-pass context.

:class:`RayJobDeps` is built once by :data:`~rayop.controllers.rayjob.blueprint.RAYJOB`
(client, informer caches, own-writes tracker, event recorder, settings, the dashboard client
factory, the clock and the random source of generated names). :class:`PassContext` is built once
per reconcile pass: the RayJob as read (a private mutable copy, for what is written back), the
RayJob parsed once (read its spec there), the status being edited and the status as read, and
the wall-clock time of the pass.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from pydantic import ValidationError

from rayop.api.rayjob import RayJob, RayJobStatus
from rayop.api.validation import Problem, Reason, validate_rayjob
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.client import DashboardClient
from rayop.controllers.dashboard.job_poller import JobInfoPoller
from rayop.controllers.dashboard.job_submissions import JobSubmissions
from rayop.controllers.dashboard.models import JobInfo, JobSubmitRequest
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.controllers.kit.gate_checks import rayjob_gate_problems
from rayop.controllers.rayjob.cluster import head_service_name
from rayop.controllers.rayjob.submitter import SubmitterOutcome
from rayop.kube.client import KubeClient
from rayop.kube.object_client import ObjectClient
from rayop.runtime.clock import Clock
from rayop.runtime.events.recorder import EventSink, EventType
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request, Result


class JobDashboard(Protocol):
    """The Ray job calls of a dashboard client (:class:`DashboardClient`); an async context
    manager that closes its connection on exit."""

    async def __aenter__(self) -> JobDashboard: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def get_job_info(self, job_id: str) -> JobInfo: ...

    async def submit_job(self, request: JobSubmitRequest) -> str: ...

    async def stop_job(self, job_id: str) -> bool: ...


DashboardFactory = Callable[[Obj, str, "str | None"], JobDashboard]
"""Builds a dashboard client for (cluster, ``status.dashboardURL``, auth token)."""


def dashboard_factory(
    client: KubeClient, *, use_kubernetes_proxy: bool, resolver: ServiceResolver | None = None
) -> DashboardFactory:
    """Returns the factory KubeRay's ``--use-kubernetes-proxy`` selects.

    Through the proxy the client reaches ``<head svc>:dashboard`` via the API server (10 s per
    call); directly it calls ``http://<dashboardURL>`` (2 s per call), which ``resolver`` maps
    where cluster DNS does not resolve it.
    """

    def make(cluster: Obj, url: str, token: str | None) -> JobDashboard:
        if use_kubernetes_proxy:
            namespace = str((cluster.get("metadata") or {}).get("namespace", ""))
            return DashboardClient.via_proxy(
                client, namespace=namespace, service=head_service_name(cluster), token=token
            )
        return DashboardClient.direct(f"http://{url}", token=token, resolver=resolver)

    return make


@dataclass(frozen=True, kw_only=True)
class RayJobDeps:
    """Everything a pass needs besides the RayJob itself."""

    client: ObjectClient
    rayjobs: CacheReader
    clusters: CacheReader
    jobs: CacheReader
    services: CacheReader
    pods: CacheReader
    secrets: CacheReader
    own_writes: OwnWrites
    """The RayJob writes whose result the RayJob cache has not shown yet."""
    recorder: EventSink
    options: OperatorOptions
    dashboards: DashboardFactory
    clock: Clock
    """Wall-clock time (``wall()``) of status timestamps, deadlines and TTLs."""
    rng: random.Random = field(default_factory=random.Random)
    """Random source of generated job ids and cluster names."""
    poller: JobInfoPoller | None = None
    """Polls running jobs in the background (``--rayjob-dashboard-poll-interval``); None: the
    Running phase GETs the job info itself in every pass, as KubeRay does."""
    submissions: JobSubmissions | None = None
    """With the poller: runs HTTPMode submissions in the background (the pass after the POST
    acts on its outcome); None: the pass POSTs itself, as KubeRay does."""


def parse_rayjob(raw: Mapping[str, Any], gates: FeatureGates) -> tuple[RayJob, list[Problem]]:
    """Returns the RayJob parsed from its wire form and what validation found wrong with it
    (KubeRay's checks, then rayop's gate checks).

    The CRD schema is generated from the same models, so an admitted RayJob always parses; one
    that does not is invalid (its problems say why) and gets a spec of defaults.
    """
    try:
        job = RayJob.model_validate(raw)
    except ValidationError:
        job = RayJob(metadata=raw.get("metadata") or {})
        problems = validate_rayjob(raw, gates=gates.by_name())
    else:
        problems = validate_rayjob(job, gates=gates.by_name())
    problems += [Problem(Reason.INVALID_RAYJOB_SPEC, p) for p in rayjob_gate_problems(raw, gates)]
    return job, problems


@dataclass(kw_only=True)
class PassContext:
    """One reconcile pass over one RayJob.

    Attributes:
        deps: The controller's dependencies.
        request: The request being reconciled.
        rayjob: A private mutable copy of the RayJob's wire form (replaced by what each own
            write returns, so the next write carries the latest resourceVersion).
        job: The RayJob parsed once at the start of the pass (read its spec here).
        problems: What validation found wrong with it (empty when valid).
        status: The status being edited by this pass.
        original: The status as read; the write happens only if they differ where it matters.
        now: The wall-clock time of the pass.
        submitter: What the submitter reported this pass (K8sJobMode, SidecarMode).
        requeue: How a pass that runs to its end is requeued; None: in 3 s (KubeRay's).
    """

    deps: RayJobDeps
    request: Request
    rayjob: dict[str, Any]
    job: RayJob
    problems: list[Problem] = field(default_factory=list)
    status: RayJobStatus
    original: RayJobStatus
    now: datetime
    submitter: SubmitterOutcome = field(default_factory=SubmitterOutcome)
    requeue: Result | None = None

    @classmethod
    def open(cls, request: Request, deps: RayJobDeps, raw: dict[str, Any]) -> PassContext:
        """Returns the context of one pass over ``raw`` (a private copy of the cached RayJob),
        parsing it once; never blocks."""
        job, problems = parse_rayjob(raw, deps.options.feature_gates)
        status = job.status.model_copy(deep=True) if job.status is not None else RayJobStatus()
        return cls(
            deps=deps,
            request=request,
            rayjob=raw,
            job=job,
            problems=problems,
            status=status,
            original=status.model_copy(deep=True),
            now=deps.clock.wall(),
        )

    @property
    def namespace(self) -> str:
        """The RayJob's namespace."""
        return self.request.namespace

    @property
    def name(self) -> str:
        """The RayJob's name."""
        return self.request.name

    def event(
        self, event_type: EventType, reason: str, note: str, *, action: str | None = None
    ) -> None:
        """Records an Event about the RayJob (``action`` defaults to ``reason``); never blocks."""
        self.deps.recorder.event(self.rayjob, event_type, reason, note, action=action)
