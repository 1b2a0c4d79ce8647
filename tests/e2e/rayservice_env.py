"""End-to-end support for RayService tests: a control plane running both Ray controllers.

:func:`running_rayservice_operator` starts an :class:`EmbeddedControlPlane` (fast kubelet, fast
Serve deployments), installs the CRDs, and runs a :class:`Manager` with the RayCluster and
RayService controllers (leader election off, no HTTP endpoints). The operator can be stopped and
started again (a new Manager, as after a process restart) while the control plane keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from prometheus_client import CollectorRegistry
from raycluster_env import FAST_KUBELET, SAMPLES, install_crds

from rayop.controllers.common.cache_config import KUBERAY_CACHE_CONFIG
from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.raycluster.setup import setup_raycluster_controller
from rayop.controllers.rayservice.setup import setup_rayservice_controller
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resource import Resource
from rayop.kube.resources import NAMESPACES, RAY_SERVICES, SECRETS, SERVICES
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.dashboard.head import DashboardConfig

Obj = dict[str, Any]
FAST_DASHBOARD = DashboardConfig(serve_deploy_seconds=0.3, job_pending_seconds=0.05)


@dataclass
class RayServiceEnv:
    """A running control plane, a user client, and the (restartable) operator under test."""

    cp: EmbeddedControlPlane
    client: KubeClient
    config: KubeConfig
    manager: Manager | None = None
    namespaces: set[str] = field(default_factory=set)
    _task: asyncio.Task[None] | None = None
    _operator_client: KubeClient | None = None

    # -- operator lifecycle --------------------------------------------------------------

    async def start_operator(self) -> None:
        """Starts a fresh Manager with both Ray controllers; returns once it is ready."""
        assert self.manager is None
        self._operator_client = KubeClient(self.config)
        manager = Manager(
            self._operator_client,
            metrics=OperatorMetrics(CollectorRegistry()),
            metrics_bind_address="0",
            health_probe_bind_address="0",
            cache_config=KUBERAY_CACHE_CONFIG,
            leader_election=False,
        )
        options = OperatorOptions()
        setup_raycluster_controller(manager, options=options, max_concurrent_reconciles=4)
        setup_rayservice_controller(manager, options=options, max_concurrent_reconciles=4)
        self.manager = manager
        self._task = asyncio.create_task(manager.run())
        async with asyncio.timeout(10):
            while not manager.is_ready():
                await asyncio.sleep(0.02)

    async def stop_operator(self) -> None:
        """Stops the Manager gracefully and closes its client."""
        if self.manager is not None:
            await self.manager.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        if self._operator_client is not None:
            await self._operator_client.close()
        self.manager, self._task, self._operator_client = None, None, None

    # -- store views (no API traffic) ----------------------------------------------------

    def stored(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        """Returns the stored object, or None."""
        info = self.cp.store.resources.get(resource.group, resource.version, resource.plural)
        assert info is not None, resource.plural
        return self.cp.store.peek(info, namespace, name)

    def objects(self, resource: Resource, namespace: str) -> list[Obj]:
        """Returns the stored objects of a kind in a namespace."""
        info = self.cp.store.resources.get(resource.group, resource.version, resource.plural)
        assert info is not None, resource.plural
        return list(self.cp.store.iter_objects(info, namespace))

    def rayservice(self, namespace: str, name: str) -> Obj:
        """Returns the stored RayService (it must exist)."""
        obj = self.stored(RAY_SERVICES, namespace, name)
        assert obj is not None, name
        return obj

    def status(self, namespace: str, name: str) -> Obj:
        """Returns the stored RayService's status ({} when none)."""
        return dict(self.rayservice(namespace, name).get("status") or {})

    def cluster_name(self, namespace: str, name: str, which: str = "active") -> str:
        """Returns the active (or "pending") cluster's name from the status ("" when none)."""
        entry = self.status(namespace, name).get(f"{which}ServiceStatus") or {}
        return str(entry.get("rayClusterName") or "")

    def condition(self, namespace: str, name: str, kind: str) -> tuple[str, str]:
        """Returns (status, reason) of a RayService condition, ("", "") when absent."""
        for c in self.status(namespace, name).get("conditions") or []:
            if c["type"] == kind:
                return str(c["status"]), str(c.get("reason") or "")
        return "", ""

    def app_statuses(self, namespace: str, name: str, which: str = "active") -> dict[str, str]:
        """Returns application name -> status from the active (or "pending") entry."""
        entry = self.status(namespace, name).get(f"{which}ServiceStatus") or {}
        apps = entry.get("applicationStatuses") or {}
        return {str(k): str(v.get("status")) for k, v in apps.items()}

    def selected_cluster(self, namespace: str, service: str) -> str:
        """Returns the ray.io/cluster a stored Service selects ("" when none or absent)."""
        svc = self.stored(SERVICES, namespace, service) or {}
        return str(((svc.get("spec") or {}).get("selector") or {}).get("ray.io/cluster") or "")

    def annotations(self, resource: Resource, namespace: str, name: str) -> dict[str, str]:
        """Returns a stored object's annotations ({} when absent)."""
        obj = self.stored(resource, namespace, name) or {}
        return dict((obj.get("metadata") or {}).get("annotations") or {})

    def is_ready(self, namespace: str, name: str) -> bool:
        """Tells whether the RayService reports Ready=True, serviceStatus Running, endpoints."""
        status = self.rayservice(namespace, name).get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        return (
            conditions.get("Ready") == "True"
            and status.get("serviceStatus") == "Running"
            and int(status.get("numServeEndpoints") or 0) > 0
        )

    def apps_running(self, namespace: str, cluster: str) -> bool:
        """Tells whether the cluster's simulated dashboard has applications, all RUNNING."""
        dash = self.cp.dashboards.for_cluster(namespace, cluster)
        if dash is None or not dash.serve.apps:
            return False
        return all(dash.serve.app_status(a) == "RUNNING" for a in dash.serve.apps.values())

    # -- user actions over HTTP ------------------------------------------------------------

    async def namespace(self, name: str) -> str:
        """Creates a namespace (once) and returns its name."""
        if name not in self.namespaces and name != "default":
            await self.client.create(NAMESPACES, {"metadata": {"name": name}})
            self.namespaces.add(name)
        return name

    async def apply_sample(self, file_name: str, namespace: str) -> Obj:
        """Creates every document of a KubeRay sample; returns the RayService."""
        await self.namespace(namespace)
        with (SAMPLES / file_name).open() as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        service: Obj | None = None
        for doc in docs:
            doc["metadata"]["namespace"] = namespace
            if doc["kind"] == "Secret":
                await self.client.create(SECRETS, doc, namespace=namespace)
            elif doc["kind"] == "RayService":
                service = await self.client.create(RAY_SERVICES, doc, namespace=namespace)
        assert service is not None, file_name
        return service

    async def create(self, rayservice: Obj, namespace: str) -> Obj:
        """Creates a RayService in ``namespace``."""
        await self.namespace(namespace)
        obj = copy.deepcopy(rayservice)
        obj["metadata"]["namespace"] = namespace
        return await self.client.create(RAY_SERVICES, obj, namespace=namespace)

    async def patch_spec(self, namespace: str, name: str, spec: Obj) -> Obj:
        """Merge-patches the RayService's spec."""
        return await self.client.patch(RAY_SERVICES, name, {"spec": spec}, namespace=namespace)


@contextlib.asynccontextmanager
async def running_rayservice_operator() -> AsyncIterator[RayServiceEnv]:
    """Starts a control plane with CRDs and the operator; stops both on exit."""
    async with EmbeddedControlPlane(kubelet=FAST_KUBELET, dashboard=FAST_DASHBOARD) as cp:
        config = KubeConfig.for_server(cp.url, token=cp.token)
        async with KubeClient(config, qps=-1) as user:
            await install_crds(user)
            env = RayServiceEnv(cp, user, config)
            await env.start_operator()
            try:
                yield env
            finally:
                await env.stop_operator()


def small_rayservice(name: str, *, delay: int = 60, workers: int = 1, apps: int = 1) -> Obj:
    """Returns a small RayService with one worker group and ``apps`` Serve applications."""
    image = "rayproject/ray:2.52.0"
    applications = [
        {"name": f"app{i}", "import_path": f"mod{i}:app", "route_prefix": f"/app{i}"}
        for i in range(apps)
    ]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name},
        "spec": {
            "rayClusterDeletionDelaySeconds": delay,
            "serveConfigV2": yaml.safe_dump({"applications": applications}),
            "rayClusterConfig": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-head", "image": image}]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "small",
                        "replicas": workers,
                        "minReplicas": 0,
                        "maxReplicas": 5,
                        "rayStartParams": {},
                        "template": {
                            "spec": {"containers": [{"name": "ray-worker", "image": image}]}
                        },
                    }
                ],
            },
        },
    }


@dataclass(frozen=True)
class SelectorSample:
    """One observed state of the serve service: when, which cluster, and its apps then."""

    time: float
    cluster: str
    apps_running: bool


class SelectorSampler:
    """Watches one Service and records, for every version seen, the cluster it selects and
    whether that cluster's simulated applications were all RUNNING at that moment.

    Use as an async context manager; :attr:`samples` fills while it is open.
    """

    def __init__(self, env: RayServiceEnv, namespace: str, service: str) -> None:
        self.env = env
        self.namespace = namespace
        self.service = service
        self.samples: list[SelectorSample] = []
        self._task: asyncio.Task[None] | None = None
        self._watching = asyncio.Event()

    async def __aenter__(self) -> SelectorSampler:
        self._task = asyncio.create_task(self._run())
        async with asyncio.timeout(5):
            await self._watching.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def clusters(self) -> list[str]:
        """Returns the distinct clusters selected, in order of first appearance."""
        seen: list[str] = []
        for sample in self.samples:
            if sample.cluster and sample.cluster not in seen:
                seen.append(sample.cluster)
        return seen

    async def _run(self) -> None:
        selector = f"metadata.name={self.service}"
        while True:
            async with self.env.client.watch(
                SERVICES, namespace=self.namespace, field_selector=selector
            ) as events:
                self._watching.set()
                async for event in events:
                    if event.type not in ("ADDED", "MODIFIED"):
                        continue
                    chosen = ((event.object.get("spec") or {}).get("selector") or {}).get(
                        "ray.io/cluster", ""
                    )
                    running = self.env.apps_running(self.namespace, chosen)
                    self.samples.append(SelectorSample(time.time(), chosen, running))
