"""Fakes for unit tests of the RayService steps: a recording client, caches as mappings, a
recording event sink, scripted Serve dashboards, and a pass context built from them on a
FakeClock.

Nothing here talks HTTP or sleeps. A test builds a :class:`World`, puts objects into its caches
(and, where a verb should find them, into its client), runs one step on :meth:`World.context`,
and looks at the calls, events and status edits. The dashboards are real
:class:`~rayop.controllers.dashboard.client.DashboardClient` objects over an in-memory transport,
so the wire format is exercised too.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import orjson
import yaml

from rayop.api.rayservice import RayService
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.client import DashboardClient
from rayop.controllers.dashboard.transport import DashboardRequest
from rayop.controllers.rayservice.cluster_builders import build_ray_cluster, goal_spec
from rayop.controllers.rayservice.context import PassContext, RayServiceDeps
from rayop.controllers.rayservice.dashboards import DashboardFactory
from rayop.controllers.rayservice.serve_cache import ServeConfigCache
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import PODS, RAY_CLUSTERS, RAY_SERVICES
from rayop.runtime.events.recorder import EventRecorder, EventType
from rayop.runtime.informers.factory import Informer
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing import FakeClock

Obj = dict[str, Any]
NS = "ns"
NAME = "svc"
UID = "svc-uid"
IMAGE = "rayproject/ray:2.52.0"
SERVE_CONFIG = yaml.safe_dump({"applications": [{"name": "app", "import_path": "m:app"}]})


def rayservice(**spec: Any) -> Obj:
    """Returns a stored-looking RayService ``ns/svc`` (one worker group, one application)."""
    worker = {
        "groupName": "small",
        "replicas": 1,
        "minReplicas": 0,
        "maxReplicas": 5,
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-worker", "image": IMAGE}]}},
    }
    head_container = {
        "name": "ray-head",
        "image": IMAGE,
        "ports": [
            {"name": "dashboard", "containerPort": 8265},
            {"name": "serve", "containerPort": 8000},
        ],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": UID,
            "generation": 1,
            "resourceVersion": "10",
            "finalizers": ["ray.io/rayservice-finalizer"],
        },
        "spec": {
            "serveConfigV2": SERVE_CONFIG,
            "rayClusterConfig": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [head_container]}},
                },
                "workerGroupSpecs": [worker],
            },
            **spec,
        },
    }


def with_status(service: Obj, *, active: str = "", pending: str = "", **status: Any) -> Obj:
    """Returns ``service`` with the named active and pending clusters in its status."""
    result = copy.deepcopy(service)
    entries = {
        "activeServiceStatus": {"rayClusterName": active} if active else {},
        "pendingServiceStatus": {"rayClusterName": pending} if pending else {},
    }
    result["status"] = {**entries, **status}
    return result


def cluster_of(service: Obj, name: str, **changes: Any) -> Obj:
    """Returns the RayCluster ``name`` the RayService would build now (uid ``<name>-uid``)."""
    cluster = build_ray_cluster(RayService.model_validate(service), goal_spec(service), name)
    cluster["metadata"].update(uid=f"{name}-uid", resourceVersion="5", **changes)
    return cluster


def head_pod(cluster: str, *, ready: bool = True, serve: str | None = None) -> Obj:
    """Returns the head pod of ``cluster`` (Running and Ready unless ``ready`` is False)."""
    labels = {"ray.io/cluster": cluster, "ray.io/node-type": "head"}
    if serve is not None:
        labels["ray.io/serve"] = serve
    return {
        "metadata": {"name": f"{cluster}-head", "namespace": NS, "labels": labels},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class FakeCache:
    """An informer cache's read side over a dict keyed by (namespace, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}

    def put(self, *objs: Mapping[str, Any]) -> None:
        """Stores copies of ``objs``."""
        for obj in objs:
            stored = copy.deepcopy(dict(obj))
            self.objects[_key(stored)] = stored

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
    body: Any = None
    propagation_policy: str | None = None


class FakeClient:
    """An API client over a dict per resource; records every call, bumps resourceVersions.

    ``fail[verb]`` makes the next call of that verb raise the given exception. ``patch`` merges
    ``metadata`` of the stored object (or returns the body alone when nothing is stored).
    """

    def __init__(self) -> None:
        self.store: dict[tuple[str, str, str], Obj] = {}
        self.calls: list[Call] = []
        self.fail: dict[str, Exception] = {}
        self._rv = 100

    def put(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        """Stores ``obj`` as the server's copy (a new resourceVersion) and returns it."""
        self._rv += 1
        stored = copy.deepcopy(dict(obj))
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
        self.store[(res.plural, *_key(stored))] = stored
        return copy.deepcopy(stored)

    def of(self, verb: str, resource: str | None = None) -> list[Call]:
        """Returns the calls of ``verb`` (``update/status`` for status), optionally of a kind."""
        return [
            c for c in self.calls if c.verb == verb and (resource is None or c.resource == resource)
        ]

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        error = self.fail.pop(call.verb, None)
        if error is not None:
            raise error

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> Obj:
        self._record(Call("get", res.plural, name))
        found = self.store.get((res.plural, namespace or "", name))
        if found is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        return copy.deepcopy(found)

    async def create(
        self, res: Resource, obj: Mapping[str, Any], *, namespace: str | None = None
    ) -> Obj:
        body = copy.deepcopy(dict(obj))
        body["metadata"]["namespace"] = namespace or body["metadata"].get("namespace", "")
        self._record(Call("create", res.plural, _key(body)[1], body))
        if (res.plural, *_key(body)) in self.store:
            raise AlreadyExists({"code": 409, "reason": "AlreadyExists"})
        return self.put(res, body)

    async def update(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        body = copy.deepcopy(dict(obj))
        self._record(Call("update", res.plural, _key(body)[1], body))
        return self.put(res, body)

    async def update_status(self, res: Resource, obj: Mapping[str, Any]) -> Obj:
        body = copy.deepcopy(dict(obj))
        self._record(Call("update/status", res.plural, _key(body)[1], body))
        return self.put(res, body)

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None
    ) -> Obj:
        self._record(Call("patch", res.plural, name, copy.deepcopy(body)))
        stored = self.store.get((res.plural, namespace or "", name))
        if stored is None:
            return {"metadata": {"name": name, "namespace": namespace or ""}}
        merged = copy.deepcopy(stored)
        merged["metadata"].update(
            {k: v for k, v in (body.get("metadata") or {}).items() if k != "resourceVersion"}
        )
        return self.put(res, merged)

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
    ) -> Obj:
        self._record(Call("delete", res.plural, name, propagation_policy=propagation_policy))
        found = self.store.pop((res.plural, namespace or "", name), None)
        if found is None:
            raise NotFound({"code": 404, "reason": "NotFound"})
        return found


@dataclass
class FakeRecorder:
    """Collects the Events a pass records as (type, reason, note)."""

    events: list[tuple[str, str, str]] = field(default_factory=list)

    actions: list[str | None] = field(default_factory=list)

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
        self.actions.append(action)

    def reasons(self) -> list[str]:
        """Returns the reasons of the recorded Events, in order."""
        return [reason for _, reason, _ in self.events]


@dataclass
class FakeServe:
    """One cluster's Serve as its dashboard and proxy show it.

    Attributes:
        apps: Application name -> status reported by GET /api/serve/applications/.
        puts: The bodies of every PUT /api/serve/applications/.
        status_after_put: The status every application of a PUT config gets.
        healthy: Whether the proxy's /-/healthz answers 200.
        put_status: The HTTP status PUT answers with.
    """

    apps: dict[str, str] = field(default_factory=dict)
    puts: list[Any] = field(default_factory=list)
    status_after_put: str = "RUNNING"
    healthy: bool = True
    put_status: int = 200


class _Transport:
    """Answers dashboard requests from a :class:`FakeServe`; never blocks."""

    timeout = 2.0

    def __init__(self, serve: FakeServe) -> None:
        self.serve = serve

    async def send(self, request: DashboardRequest) -> tuple[int, bytes]:
        serve = self.serve
        if request.path == "/-/healthz":
            return (200, b"success") if serve.healthy else (503, b"unhealthy")
        if request.method == "PUT":
            serve.puts.append(request.json)
            if serve.put_status >= 300:
                return serve.put_status, b"refused"
            names = [a["name"] for a in request.json.get("applications") or []]
            serve.apps = {n: serve.status_after_put for n in names}
            return 200, b"{}"
        apps = {
            n: {"name": n, "status": s, "message": "", "deployments": {}}
            for n, s in serve.apps.items()
        }
        return 200, orjson.dumps({"applications": apps})

    async def close(self) -> None:
        return None


class FakeDashboards:
    """Hands out dashboard clients whose Serve state is :attr:`serve` by head service name."""

    def __init__(self) -> None:
        self.serve: dict[str, FakeServe] = {}
        self.opened: list[tuple[str, str]] = []

    def of(self, cluster: str) -> FakeServe:
        """Returns (creating) the Serve state of ``cluster``'s head service."""
        return self.serve.setdefault(f"{cluster}-head-svc", FakeServe())

    def client(
        self, *, namespace: str, service: str, port_name: str, port: int, token: str | None = None
    ) -> DashboardClient:
        self.opened.append((service, port_name))
        return DashboardClient(_Transport(self.serve.setdefault(service, FakeServe())))


@dataclass
class World:
    """The fakes one test's passes share, and the contexts built on them."""

    clock: FakeClock = field(default_factory=FakeClock)
    client: FakeClient = field(default_factory=FakeClient)
    rayservices: FakeCache = field(default_factory=FakeCache)
    clusters: FakeCache = field(default_factory=FakeCache)
    services: FakeCache = field(default_factory=FakeCache)
    pods: FakeCache = field(default_factory=FakeCache)
    endpoint_slices: FakeCache = field(default_factory=FakeCache)
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    dashboards: FakeDashboards = field(default_factory=FakeDashboards)
    serve_cache: ServeConfigCache = field(default_factory=ServeConfigCache)
    options: OperatorOptions = field(default_factory=OperatorOptions)
    own_writes: OwnWrites = field(init=False)

    def __post_init__(self) -> None:
        self.own_writes = OwnWrites(clock=self.clock)

    def deps(self) -> RayServiceDeps:
        """Returns controller dependencies made of this world's fakes."""
        return RayServiceDeps(
            client=cast(KubeClient, self.client),
            rayservices=cast(Informer, self.rayservices),
            clusters=cast(Informer, self.clusters),
            services=cast(Informer, self.services),
            pods=cast(Informer, self.pods),
            endpoint_slices=cast(Informer, self.endpoint_slices),
            recorder=cast(EventRecorder, self.recorder),
            options=self.options,
            dashboards=cast(DashboardFactory, self.dashboards),
            serve_cache=self.serve_cache,
            own_writes=self.own_writes,
            clock=self.clock,
            rng=random.Random(7),
        )

    def context(self, service: Obj) -> PassContext:
        """Returns the context of a pass over ``service``, which is put into the RayService
        cache and the client as it is."""
        self.rayservices.put(service)
        self.client.store[(RAY_SERVICES.plural, NS, NAME)] = copy.deepcopy(service)
        cached = self.rayservices.get(NS, NAME)
        assert cached is not None
        return PassContext.open(Request(NS, NAME), self.deps(), cached)

    def add_cluster(self, cluster: Obj, *, head_ready: bool | None = True) -> None:
        """Puts ``cluster`` in the cache and the client, with a head pod unless ``head_ready``
        is None."""
        self.clusters.put(cluster)
        self.client.store[(RAY_CLUSTERS.plural, NS, cluster["metadata"]["name"])] = cluster
        if head_ready is not None:
            pod = head_pod(cluster["metadata"]["name"], ready=head_ready)
            self.pods.put(pod)
            self.client.store[(PODS.plural, NS, pod["metadata"]["name"])] = pod
