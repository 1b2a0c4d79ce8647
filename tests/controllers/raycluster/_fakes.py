"""Fakes for unit tests of the RayCluster reconcile steps: no HTTP, no real time.

:func:`context` builds a :class:`PassContext` over a wire RayCluster with a
:class:`FakeApi` (records every call, answers like an API server would), :class:`Cache` objects
standing in for informer caches (fed by hand, read by owner uid, name or labels), an
:class:`Events` recorder and a :class:`~rayop.testing.FakeClock`.
"""

from __future__ import annotations

import builtins
import copy
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.context import (
    PassContext,
    ReconcilerDeps,
)
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, Conflict, NotFound
from rayop.kube.resource import Resource
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.informers.factory import Informer, InformerFactory
from rayop.runtime.informers.indexer import OWNER_UID_INDEX
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing import FakeClock

Obj = dict[str, Any]
NS = "ns"
UID = "u-1"


def _error(kind: type[Exception], reason: str, code: int, message: str) -> Exception:
    return kind({"code": code, "reason": reason, "message": message})


class Cache:
    """An informer cache fed by hand: objects by name, read by owner uid, name or labels."""

    def __init__(self, objects: Iterable[Obj] = ()) -> None:
        self.objects: dict[str, Obj] = {}
        self._changes = 0
        self._seen: tuple[tuple[str, int], ...] = ()
        for obj in objects:
            self.put(obj)

    @property
    def changes(self) -> int:
        """Grows whenever the objects differ from the last time it was read (tests also edit
        ``objects`` directly), as ``SharedInformer.changes`` grows with every store."""
        now = tuple((name, id(obj)) for name, obj in self.objects.items())
        if now != self._seen:
            self._seen = now
            self._changes += 1
        return self._changes

    def put(self, obj: Obj) -> None:
        """Adds or replaces ``obj`` (keyed by name)."""
        self.objects[obj["metadata"]["name"]] = obj

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.objects.get(name)

    def list(
        self, namespace: str | None = None, *, label_selector: Mapping[str, str] | None = None
    ) -> list[Obj]:
        want = dict(label_selector or {})
        return [
            o
            for o in self.objects.values()
            if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in want.items())
        ]

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        assert index == OWNER_UID_INDEX
        return [
            o
            for o in self.objects.values()
            if any(r.get("uid") == value for r in o["metadata"].get("ownerReferences", []))
        ]


class Informers:
    """The lazily started caches of kinds read only in some clusters, one :class:`Cache` each."""

    def __init__(self) -> None:
        self.caches: dict[str, Cache] = {}

    def informer(self, resource: Resource) -> Cache:
        return self.caches.setdefault(resource.kind, Cache())


@dataclass
class Call:
    """One API call: verb, kind, name and the body sent (if any)."""

    verb: str
    kind: str
    name: str
    body: Any = None


@dataclass
class FakeApi:
    """Records calls; creates fill in generated names and resourceVersions.

    ``fail`` maps ``(verb, kind)`` to the exception that call raises; ``gone`` names objects a
    delete or get answers NotFound for; ``existing`` names objects a create answers
    AlreadyExists for.
    """

    calls: list[Call] = field(default_factory=list)
    fail: dict[tuple[str, str], Exception] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    existing: set[str] = field(default_factory=set)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def verbs(self, verb: str, kind: str | None = None) -> list[Call]:
        """Returns the calls of one verb (and kind), in order."""
        return [c for c in self.calls if c.verb == verb and kind in (None, c.kind)]

    def _answer(self, verb: str, res: Resource, name: str, body: Any = None) -> Obj:
        self.calls.append(Call(verb, res.kind, name, body))
        error = self.fail.get((verb, res.kind))
        if error is not None:
            raise error
        obj: Obj = copy.deepcopy(dict(body)) if isinstance(body, Mapping) else {"metadata": {}}
        obj.setdefault("metadata", {}).update(name=name, resourceVersion=str(100 + next(self._seq)))
        return obj

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        if name in self.gone:
            self.calls.append(Call("get", res.kind, name))
            raise _error(NotFound, "NotFound", 404, name)
        return self._answer("get", res, name)

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj:
        meta = obj["metadata"]
        name = meta.get("name") or f"{meta['generateName']}x{len(self.verbs('create', res.kind))}"
        if name in self.existing:
            self.calls.append(Call("create", res.kind, name, obj))
            raise _error(AlreadyExists, "AlreadyExists", 409, name)
        return self._answer("create", res, name, obj)

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        return self._answer("update", res, obj["metadata"]["name"], obj)

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        return self._answer("update_status", res, obj["metadata"]["name"], obj)

    async def patch(self, res: Resource, name: str, body: Any, **_: Any) -> Obj:
        return self._answer("patch", res, name, body)

    async def delete(self, res: Resource, name: str, **kwargs: Any) -> Obj:
        if name in self.gone:
            self.calls.append(Call("delete", res.kind, name, kwargs))
            raise _error(NotFound, "NotFound", 404, name)
        return self._answer("delete", res, name, kwargs)


def conflict(name: str = "rc") -> Exception:
    """Returns the 409 an update with a stale resourceVersion gets."""
    return _error(Conflict, "Conflict", 409, name)


@dataclass
class Event:
    """One recorded event."""

    type: str
    reason: str
    note: str
    action: str


class Events:
    """An event recorder that keeps what it was given."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def event(
        self, regarding: Mapping[str, Any], event_type: str, reason: str, note: str, **kw: Any
    ) -> None:
        self.events.append(Event(event_type, reason, note, str(kw.get("action", ""))))

    def reasons(self) -> list[str]:
        """Returns the recorded reasons, in order."""
        return [e.reason for e in self.events]


@dataclass
class Fakes:
    """Everything a test context is built from, for the test to feed and inspect."""

    api: FakeApi = field(default_factory=FakeApi)
    clusters: Cache = field(default_factory=Cache)
    pods: Cache = field(default_factory=Cache)
    services: Cache = field(default_factory=Cache)
    informers: Informers = field(default_factory=Informers)
    events: Events = field(default_factory=Events)
    clock: FakeClock = field(default_factory=FakeClock)
    options: OperatorOptions = field(default_factory=OperatorOptions)

    def deps(self) -> ReconcilerDeps:
        """Returns reconciler dependencies over these fakes (new expectations and own writes)."""
        return ReconcilerDeps(
            client=cast(KubeClient, self.api),
            clusters=cast(Informer, self.clusters),
            pods=cast(Informer, self.pods),
            services=cast(Informer, self.services),
            informers=cast(InformerFactory, self.informers),
            recorder=cast(EventRecorder, self.events),
            expectations=ScaleExpectations(self.pods.get, clock=self.clock),
            own_writes=OwnWrites(clock=self.clock),
            options=self.options,
            clock=self.clock,
        )


def context(
    cluster: Mapping[str, Any], fakes: Fakes | None = None, deps: ReconcilerDeps | None = None
) -> PassContext:
    """Returns the context of one pass over ``cluster`` (parsed as the reconciler does)."""
    fakes = fakes or Fakes()
    meta = cluster["metadata"]
    return PassContext.open(
        Request(meta.get("namespace", ""), meta["name"]), deps or fakes.deps(), cluster
    )


def pod(
    name: str,
    node_type: str,
    group: str,
    phase: str = "Running",
    *,
    ready: bool = True,
    cluster: str = "rc",
    uid: str = UID,
    labels: Mapping[str, str] | None = None,
) -> Obj:
    """Returns a cached pod of the cluster, owned by ``uid``."""
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"pod-{name}",
            "labels": {
                "ray.io/cluster": cluster,
                "ray.io/node-type": node_type,
                "ray.io/group": group,
                **(labels or {}),
            },
            "ownerReferences": [{"uid": uid, "controller": True, "kind": "RayCluster"}],
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "ray"}]},
        "status": {"phase": phase, "conditions": conditions},
    }
