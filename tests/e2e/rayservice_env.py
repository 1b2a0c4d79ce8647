"""End-to-end support for RayService tests: the kit's plane running both Ray controllers.

:func:`running_rayservice_operator` starts the test kit's embedded control plane (fast kubelet,
fast Serve deployments, CRDs) and rayop's operator with the RayCluster and RayService
controllers. The operator can be stopped and started again (a new Manager, as after a process
restart) while the control plane keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import yaml

from rayop.kube.resource import Resource
from rayop.kube.resources import RAY_SERVICES, SECRETS, SERVICES
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import FAST_KUBELET
from tests.kuberay_compat import sample_docs

from .operator_env import E2eEnv, open_env

Obj = dict[str, Any]
FAST_DASHBOARD = DashboardConfig(serve_deploy_seconds=0.3, job_pending_seconds=0.05)


class RayServiceEnv(E2eEnv):
    """A running plane, a user client, and the (restartable) RayCluster and RayService
    controllers."""

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

    async def apply_sample(self, file_name: str, namespace: str) -> Obj:
        """Creates every document of a KubeRay sample; returns the RayService."""
        await self.namespace(namespace)
        docs = sample_docs(file_name)
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
        return await self.plane.create(RAY_SERVICES, rayservice, namespace)

    async def patch_spec(self, namespace: str, name: str, spec: Obj) -> Obj:
        """Merge-patches the RayService's spec."""
        return await self.client.patch(RAY_SERVICES, name, {"spec": spec}, namespace=namespace)


@contextlib.asynccontextmanager
async def running_rayservice_operator() -> AsyncIterator[RayServiceEnv]:
    """Starts a control plane with CRDs and the operator; stops both on exit."""
    plane = {"kubelet": FAST_KUBELET, "dashboard": FAST_DASHBOARD}
    operator = {"controllers": ("RayCluster", "RayService"), "concurrency": 4}
    async with open_env(RayServiceEnv, plane=plane, operator=operator) as env:
        yield env


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
