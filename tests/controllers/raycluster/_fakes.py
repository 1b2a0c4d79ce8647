"""Fakes for unit tests of the RayCluster reconcile steps: no HTTP, no real time.

:func:`context` builds a :class:`PassContext` over a wire RayCluster with the kit's
:class:`~rayop.testing.FakeClient` (records every call, answers like an API server would),
:class:`Cache` objects standing in for informer caches (fed by hand, read by owner uid, name or
labels, with the informer's change count), the kit's
:class:`~rayop.testing.RecordingEventSink` and a :class:`~rayop.testing.FakeClock`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.context import (
    PassContext,
    ReconcilerDeps,
)
from rayop.kube.client import KubeClient
from rayop.kube.errors import Conflict
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.informers.factory import Informer, InformerFactory
from rayop.runtime.informers.indexer import OWNER_UID_INDEX
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing import FakeClient, FakeClock, RecordingEventSink, api_error

Obj = dict[str, Any]
NS = "ns"
UID = "u-1"


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


def conflict(name: str = "rc") -> Exception:
    """Returns the 409 an update with a stale resourceVersion gets."""
    return api_error(Conflict, 409, "Conflict", name)


@dataclass
class Fakes:
    """Everything a test context is built from, for the test to feed and inspect."""

    api: FakeClient = field(default_factory=FakeClient)
    clusters: Cache = field(default_factory=Cache)
    pods: Cache = field(default_factory=Cache)
    services: Cache = field(default_factory=Cache)
    informers: Informers = field(default_factory=Informers)
    events: RecordingEventSink = field(default_factory=RecordingEventSink)
    clock: FakeClock = field(default_factory=FakeClock)
    options: OperatorOptions = field(default_factory=OperatorOptions)

    def add_pod(self, *pods: Obj) -> None:
        """Puts ``pods`` in the pods cache and on the server (where a delete or patch finds
        them); a pod only in :attr:`pods` is one the server no longer has."""
        for obj in pods:
            self.pods.put(obj)
            self.api.put(PODS, obj)

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
