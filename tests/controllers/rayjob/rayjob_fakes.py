"""A world for unit tests of RayJob steps and phases: the kit's fake client, caches and event
sink, a scripted dashboard, and a pass context built from them on a FakeClock.

Nothing here talks HTTP or sleeps: a test builds a :class:`World`, puts objects into its caches
(and, when a verb should find them, into its client), runs one step or phase on
:meth:`World.context`, and looks at the calls, events and status edits.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rayop.api.rayjob import RayJobStatus
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.errors import JobNotFound
from rayop.controllers.dashboard.job_poller import JobInfoPoller
from rayop.controllers.dashboard.job_submissions import JobSubmissions
from rayop.controllers.dashboard.models import JobInfo, JobSubmitRequest
from rayop.controllers.rayjob.blueprint import _still_polled
from rayop.controllers.rayjob.context import PassContext, RayJobDeps
from rayop.controllers.rayjob.reconciler import RayJobReconciler
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing import FakeCache, FakeClient, FakeClock, RecordingEventSink


class FakeDashboard:
    """A dashboard that answers from ``jobs`` (submission id -> JobInfo) and records its calls.

    ``error`` (when set) is raised by every call; a missing job raises JobNotFound. ``hang``
    (when set) holds every GET and POST that many seconds of the event loop's time first (a
    dashboard that does not answer; run the test under looptime).
    """

    def __init__(self) -> None:
        self.jobs: dict[str, JobInfo] = {}
        self.submitted: list[JobSubmitRequest] = []
        self.stopped: list[str] = []
        self.error: Exception | None = None
        self.opened: list[tuple[str, str | None]] = []
        self.hang: float | None = None
        self.gets = 0
        """GET /api/jobs/<id> calls so far."""
        self.closed = 0
        """Clients closed so far (``async with`` blocks left); each :meth:`open` is one client."""

    async def __aenter__(self) -> FakeDashboard:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closed += 1

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    async def _wait(self) -> None:
        if self.hang is not None:
            await asyncio.sleep(self.hang)

    async def get_job_info(self, job_id: str) -> JobInfo:
        self.gets += 1
        await self._wait()
        self._check()
        if job_id not in self.jobs:
            raise JobNotFound(job_id)
        return self.jobs[job_id]

    async def submit_job(self, request: JobSubmitRequest) -> str:
        await self._wait()
        self._check()
        self.submitted.append(request)
        return request.submission_id or ""

    async def stop_job(self, job_id: str) -> bool:
        self._check()
        self.stopped.append(job_id)
        return True

    def open(self, cluster: Obj, url: str, token: str | None) -> FakeDashboard:
        """The dashboard factory: records (url, token) and returns this dashboard."""
        self.opened.append((url, token))
        return self


@dataclass
class World:
    """Everything a RayJob pass touches, faked; :meth:`context` builds a pass over a RayJob."""

    clock: FakeClock = field(default_factory=FakeClock)
    client: FakeClient = field(default_factory=FakeClient)
    rayjobs: FakeCache = field(default_factory=FakeCache)
    clusters: FakeCache = field(default_factory=FakeCache)
    jobs: FakeCache = field(default_factory=FakeCache)
    services: FakeCache = field(default_factory=FakeCache)
    pods: FakeCache = field(default_factory=FakeCache)
    secrets: FakeCache = field(default_factory=FakeCache)
    recorder: RecordingEventSink = field(default_factory=RecordingEventSink)
    dashboard: FakeDashboard = field(default_factory=FakeDashboard)
    options: OperatorOptions = field(default_factory=OperatorOptions)
    poll_interval: float = 0.0
    """> 0: passes read a background poller (:attr:`poller`) and submit in the background
    (:attr:`submissions`), as ``rayop run`` does."""
    own_writes: OwnWrites = field(init=False)
    poller: JobInfoPoller | None = field(init=False, default=None)
    submissions: JobSubmissions | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.own_writes = OwnWrites(clock=self.clock)
        if self.poll_interval > 0:
            self.poller = JobInfoPoller(
                interval=self.poll_interval,
                clock=self.clock,
                still_wanted=_still_polled(self.rayjobs, self.clusters),
            )
            self.submissions = JobSubmissions(
                still_wanted=_still_polled(self.rayjobs, self.clusters)
            )

    def deps(self) -> RayJobDeps:
        """Returns the controller dependencies over the fakes."""
        return RayJobDeps(
            client=self.client,
            rayjobs=self.rayjobs,
            clusters=self.clusters,
            jobs=self.jobs,
            services=self.services,
            pods=self.pods,
            secrets=self.secrets,
            own_writes=self.own_writes,
            recorder=self.recorder,
            options=self.options,
            dashboards=self.dashboard.open,
            clock=self.clock,
            poller=self.poller,
            submissions=self.submissions,
        )

    def events(self) -> list[tuple[str, str, str]]:
        """Returns the recorded Events as (type, reason, note), in order."""
        return [(e.type, e.reason, e.note) for e in self.recorder.recorded]

    @staticmethod
    def hold(cache: FakeCache, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Puts ``obj`` in ``cache`` and returns the object the cache now holds."""
        cache.put(obj)
        meta = obj["metadata"]
        held = cache.get(meta.get("namespace"), meta["name"])
        assert held is not None
        return held

    def reconciler(self) -> RayJobReconciler:
        """Returns a reconciler over the fakes."""
        return RayJobReconciler(self.deps())

    def context(self, rayjob: Mapping[str, Any], **status: Any) -> PassContext:
        """Returns the context of a pass over ``rayjob`` with ``status`` fields (snake_case)
        set on top of its own status, as if the cache held that."""
        raw = copy.deepcopy(dict(rayjob))
        if status:
            merged = RayJobStatus.model_validate(raw.get("status") or {}).model_copy(update=status)
            raw["status"] = merged.model_dump(by_alias=True, exclude_none=True)
        meta = raw["metadata"]
        return PassContext.open(
            Request(meta["namespace"], meta["name"]), self.reconciler().deps, raw
        )
