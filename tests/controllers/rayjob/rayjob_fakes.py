"""Fakes for unit tests of RayJob steps and phases: a recording client, caches as mappings, a
recording event sink, a scripted dashboard, and a pass context built from them on a FakeClock.

Nothing here talks HTTP or sleeps: a test builds a :class:`World`, puts objects into its caches
(and, when a verb should find them, into its client), runs one step or phase on
:meth:`World.context`, and looks at the calls, events and status edits.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rayop.api.rayjob import RayJobStatus
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.errors import JobNotFound
from rayop.controllers.dashboard.job_poller import JobInfoPoller
from rayop.controllers.dashboard.models import JobInfo, JobSubmitRequest
from rayop.controllers.rayjob.blueprint import _still_polled
from rayop.controllers.rayjob.context import Obj, PassContext, RayJobDeps
from rayop.controllers.rayjob.reconciler import RayJobReconciler
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resource import Resource
from rayop.runtime.events.recorder import EventType
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing import FakeClock


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class FakeCache:
    """An informer cache's read side over a dict keyed by (namespace, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Stores a copy of ``obj`` and returns it."""
        stored = copy.deepcopy(dict(obj))
        self.objects[_key(stored)] = stored
        return stored

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.objects.get((namespace or "", name))

    def list(self, namespace: str | None = None, *, label_selector: Any = None) -> list[Obj]:
        wanted = dict(label_selector or {})
        return [
            o
            for (ns, _), o in self.objects.items()
            if (namespace is None or ns == namespace)
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())
        ]


@dataclass(frozen=True)
class Call:
    """One API call the fake client received."""

    verb: str
    resource: str
    name: str
    body: dict[str, Any] | None = None
    propagation_policy: str | None = None


class FakeClient:
    """An API client over a dict per resource; records every call, bumps resourceVersions.

    ``fail[verb]`` makes the next call of that verb raise the given exception.
    """

    def __init__(self) -> None:
        self.store: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.fail: dict[str, Exception] = {}
        self._rv = 100

    def put(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Stores ``obj`` as the server's copy (a new resourceVersion) and returns it."""
        self._rv += 1
        stored = copy.deepcopy(dict(obj))
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
        self.store[(res.plural, *_key(stored))] = stored
        return copy.deepcopy(stored)

    def verbs(self, resource: str | None = None) -> list[str]:
        """Returns ``verb`` (or ``verb/subresource``) of each call, optionally of one resource."""
        return [c.verb for c in self.calls if resource is None or c.resource == resource]

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        error = self.fail.pop(call.verb, None)
        if error is not None:
            raise error

    async def get(
        self, res: Resource, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        self._record(Call("get", res.plural, name))
        found = self.store.get((res.plural, namespace or "", name))
        if found is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        return copy.deepcopy(found)

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        body = copy.deepcopy(dict(obj))
        body["metadata"]["namespace"] = namespace or body["metadata"].get("namespace", "")
        self._record(Call("create", res.plural, _key(body)[1], body))
        if (res.plural, *_key(body)) in self.store:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        return self.put(res, body)

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(dict(obj))
        self._record(Call("update", res.plural, _key(body)[1], body))
        return self.put(res, body)

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(dict(obj))
        self._record(Call("update/status", res.plural, _key(body)[1], body))
        return self.put(res, body)

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
    ) -> dict[str, Any]:
        self._record(Call("delete", res.plural, name, propagation_policy=propagation_policy))
        found = self.store.pop((res.plural, namespace or "", name), None)
        if found is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        return found


@dataclass
class FakeRecorder:
    """Collects the Events a pass records as (type, reason, note)."""

    events: list[tuple[str, str, str]] = field(default_factory=list)

    def event(
        self,
        regarding: Mapping[str, Any],
        event_type: EventType,
        reason: str,
        note: str,
        *,
        action: str | None = None,
    ) -> None:
        self.events.append((event_type, reason, note))

    def reasons(self) -> list[str]:
        """Returns the reasons of the recorded Events, in order."""
        return [reason for _, reason, _ in self.events]


class FakeDashboard:
    """A dashboard that answers from ``jobs`` (submission id -> JobInfo) and records its calls.

    ``error`` (when set) is raised by every call; a missing job raises JobNotFound.
    """

    def __init__(self) -> None:
        self.jobs: dict[str, JobInfo] = {}
        self.submitted: list[JobSubmitRequest] = []
        self.stopped: list[str] = []
        self.error: Exception | None = None
        self.opened: list[tuple[str, str | None]] = []
        self.gets = 0
        """GET /api/jobs/<id> calls so far."""

    async def __aenter__(self) -> FakeDashboard:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    async def get_job_info(self, job_id: str) -> JobInfo:
        self.gets += 1
        self._check()
        if job_id not in self.jobs:
            raise JobNotFound(job_id)
        return self.jobs[job_id]

    async def submit_job(self, request: JobSubmitRequest) -> str:
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
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    dashboard: FakeDashboard = field(default_factory=FakeDashboard)
    options: OperatorOptions = field(default_factory=OperatorOptions)
    poll_interval: float = 0.0
    """> 0: passes read a background poller (:attr:`poller`), as ``rayop run`` does."""
    own_writes: OwnWrites = field(init=False)
    poller: JobInfoPoller | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.own_writes = OwnWrites(clock=self.clock)
        if self.poll_interval > 0:
            self.poller = JobInfoPoller(
                interval=self.poll_interval,
                clock=self.clock,
                still_wanted=_still_polled(self.rayjobs, self.clusters),
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
        )

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
        return PassContext.open(Request(meta["namespace"], meta["name"]), self.reconciler().deps, raw)
