"""A world for unit tests of the RayService steps: the kit's fake client, caches and event sink,
scripted Serve dashboards, and a pass context built from them on a FakeClock.

Nothing here talks HTTP or sleeps. A test builds a :class:`World`, puts objects into its caches
(and, where a verb should find them, into its client), runs one step on :meth:`World.context`,
and looks at the calls, events and status edits. The dashboards are real
:class:`~rayop.controllers.dashboard.client.DashboardClient` objects over an in-memory transport,
so the wire format is exercised too.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any, cast

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
from rayop.kube.resources import PODS, RAY_CLUSTERS, RAY_SERVICES
from rayop.runtime.events.recorder import EventRecorder
from rayop.runtime.informers.factory import Informer
from rayop.runtime.informers.on_demand import OnDemandCache
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request
from rayop.testing import FakeCache, FakeClient, FakeClock, RecordingEventSink

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
        self.tokens: list[str | None] = []

    def of(self, cluster: str) -> FakeServe:
        """Returns (creating) the Serve state of ``cluster``'s head service."""
        return self.serve.setdefault(f"{cluster}-head-svc", FakeServe())

    def client(
        self, *, namespace: str, service: str, port_name: str, port: int, token: str | None = None
    ) -> DashboardClient:
        self.opened.append((service, port_name))
        self.tokens.append(token)
        return DashboardClient(_Transport(self.serve.setdefault(service, FakeServe())), token=token)


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
    secrets: FakeCache = field(default_factory=FakeCache)
    recorder: RecordingEventSink = field(default_factory=RecordingEventSink)
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
            endpoint_slices=OnDemandCache(lambda: self.endpoint_slices, "endpointslices"),
            secrets=self.secrets,
            recorder=cast(EventRecorder, self.recorder),
            options=self.options,
            dashboards=cast(DashboardFactory, self.dashboards),
            serve_cache=self.serve_cache,
            own_writes=self.own_writes,
            clock=self.clock,
            rng=random.Random(7),
        )

    def events(self) -> list[tuple[str, str, str]]:
        """Returns the recorded Events as (type, reason, note), in order."""
        return [(e.type, e.reason, e.note) for e in self.recorder.recorded]

    def actions(self) -> list[str | None]:
        """Returns the actions of the recorded Events, in order."""
        return [e.action for e in self.recorder.recorded]

    def context(self, service: Obj) -> PassContext:
        """Returns the context of a pass over ``service``, which is put into the RayService
        cache and the client as it is."""
        self.rayservices.put(service)
        self.client.put(RAY_SERVICES, service)
        cached = self.rayservices.get(NS, NAME)
        assert cached is not None
        return PassContext.open(Request(NS, NAME), self.deps(), cached)

    def add_cluster(self, cluster: Obj, *, head_ready: bool | None = True) -> None:
        """Puts ``cluster`` in the client and its stored copy (the server's resourceVersion) in
        the cache, as a synced cache holds it, with a head pod unless ``head_ready`` is None."""
        self.clusters.put(self.client.put(RAY_CLUSTERS, cluster))
        if head_ready is not None:
            pod = head_pod(cluster["metadata"]["name"], ready=head_ready)
            self.pods.put(pod)
            self.client.put(PODS, pod)
