"""End-to-end support: the embedded control plane, the CRDs, and rayop's operator over HTTP.

``operator_env`` starts an :class:`EmbeddedControlPlane` with a fast simulated kubelet, installs
rayop's CRDs through the API, and runs a real :class:`Manager` with the RayCluster controller on
a :class:`KubeClient` (leader election off, no HTTP endpoints). Tests act as users through the
same HTTP API and observe the results in the control plane's store and audit.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from rayop.api.crds import build_crds
from rayop.controllers.common.cache_config import KUBERAY_CACHE_CONFIG
from rayop.controllers.common.options import FeatureGates, OperatorOptions
from rayop.controllers.raycluster.setup import setup_raycluster_controller
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.errors import NotFound
from rayop.kube.resources import CRDS, NAMESPACES, RAY_CLUSTERS
from rayop.runtime.controller import Controller
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig

SAMPLES = (
    Path(__file__).resolve().parents[2].parent / "shared" / "compat" / "kuberay-v1.7.0" / "samples"
)
FAST_KUBELET = KubeletConfig(
    pending_delay=0.02, running_delay=0.05, ready_delay=0.05, delete_delay=0.05, seed=7
)
GATED_SAMPLES: dict[str, str] = {
    "ray-cluster.historyserver.yaml": "RayClusterHistoryServer",
    "ray-cluster.mtls.yaml": "RayClusterMTLS",
    "ray-cluster.network-policy-deny-all.yaml": "RayClusterNetworkPolicy",
}
"""KubeRay samples that use a feature behind an alpha gate (off by default) -> that gate."""
SAMPLE_GATES = FeatureGates().with_overrides(dict.fromkeys(GATED_SAMPLES.values(), True))
"""The alpha gates of ``GATED_SAMPLES`` turned on; rayop still refuses those samples under them,
as it does not implement the features (see ``rayop.controllers.common.gate_checks``)."""

Obj = dict[str, Any]


async def eventually(
    predicate: Callable[[], bool], *, timeout: float = 30.0, what: str = ""
) -> None:
    """Blocks until ``predicate()`` holds, checking every 20 ms; fails the test on timeout."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.02)
    except TimeoutError:
        pytest.fail(f"timed out after {timeout} s waiting for {what or predicate}")


@dataclass
class OperatorEnv:
    """A running control plane, a user client, and the operator under test."""

    cp: EmbeddedControlPlane
    client: KubeClient
    manager: Manager
    controller: Controller
    namespaces: set[str] = field(default_factory=set)

    # -- store views (no API traffic) --------------------------------------------------------

    def _info(self, group: str, version: str, plural: str) -> Any:
        info = self.cp.store.resources.get(group, version, plural)
        assert info is not None, plural
        return info

    def objects(
        self, plural: str, namespace: str, *, group: str = "", version: str = "v1"
    ) -> list[Obj]:
        """Returns the stored objects of a kind in a namespace."""
        return list(self.cp.store.iter_objects(self._info(group, version, plural), namespace))

    def pods(self, namespace: str, cluster: str, *, live_only: bool = True) -> list[Obj]:
        """Returns the stored pods of a RayCluster (without terminating ones by default)."""
        return [
            p
            for p in self.objects("pods", namespace)
            if (p["metadata"].get("labels") or {}).get("ray.io/cluster") == cluster
            and (p["metadata"].get("labels") or {}).get("ray.io/node-type") in ("head", "worker")
            and not (live_only and p["metadata"].get("deletionTimestamp"))
        ]

    def raycluster(self, namespace: str, name: str) -> Obj | None:
        """Returns the stored RayCluster, or None."""
        return self.cp.store.peek(self._info("ray.io", "v1", "rayclusters"), namespace, name)

    def events(self, namespace: str, reason: str | None = None) -> list[Obj]:
        """Returns the stored Events of a namespace (optionally of one reason) in events.k8s.io
        form (``regarding``, ``note``), whichever form the store keeps them in."""
        found = []
        for e in self.objects("events", namespace, group="events.k8s.io"):
            if reason is not None and e.get("reason") != reason:
                continue
            event = dict(e)
            event.setdefault("regarding", e.get("involvedObject"))
            event["regarding"] = event["regarding"] or e.get("involvedObject") or {}
            event["note"] = e.get("note") or e.get("message")
            found.append(event)
        return found

    def converged(self, namespace: str, name: str) -> bool:
        """Tells whether the RayCluster is ready as KubeRay reports it (state, conditions, pods)."""
        rc = self.raycluster(namespace, name)
        if rc is None:
            return False
        status = rc.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        pods = self.pods(namespace, name)
        desired = status.get("desiredWorkerReplicas", 0)
        return (
            status.get("state") == "ready"
            and conditions.get("HeadPodReady") == "True"
            and conditions.get("RayClusterProvisioned") == "True"
            and status.get("observedGeneration") == rc["metadata"].get("generation")
            and len(pods) == desired + 1
            and status.get("readyWorkerReplicas", 0) == desired
            and all(_running_and_ready(p) for p in pods)
        )

    # -- user actions over HTTP --------------------------------------------------------------

    async def namespace(self, name: str) -> str:
        """Creates a namespace (once) and returns its name."""
        if name not in self.namespaces and name != "default":
            await self.client.create(NAMESPACES, {"metadata": {"name": name}})
            self.namespaces.add(name)
        return name

    async def apply(self, raycluster: Obj, namespace: str) -> Obj:
        """Creates a RayCluster in ``namespace``."""
        await self.namespace(namespace)
        obj = copy.deepcopy(raycluster)
        obj["metadata"]["namespace"] = namespace
        return await self.client.create(RAY_CLUSTERS, obj, namespace=namespace)

    async def edit(self, namespace: str, name: str, mutate: Callable[[Obj], None]) -> Obj:
        """Read-modify-writes a RayCluster, retrying on 409."""
        for _ in range(50):
            obj = await self.client.get(RAY_CLUSTERS, name, namespace=namespace)
            mutate(obj)
            with contextlib.suppress(Exception):
                return await self.client.update(RAY_CLUSTERS, obj)
        raise AssertionError("could not update the RayCluster")


def _running_and_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return status.get("phase") == "Running" and ready


def load_sample(file_name: str) -> list[Obj]:
    """Returns the RayCluster documents of a KubeRay sample file."""
    with (SAMPLES / file_name).open() as f:
        return [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "RayCluster"]


def sample_files() -> list[str]:
    """Returns the KubeRay sample files that contain a RayCluster."""
    return sorted(p.name for p in SAMPLES.glob("ray-cluster*.yaml") if load_sample(p.name))


def simple_cluster(name: str, *, workers: int = 2, group: str = "workergroup", **spec: Any) -> Obj:
    """Returns a small RayCluster with one worker group."""
    container = {"name": "ray-worker", "image": "rayproject/ray:2.46.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": group,
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": 100,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container]}},
                }
            ],
            **spec,
        },
    }


async def install_crds(client: KubeClient) -> None:
    """Creates rayop's CRDs and waits until RayClusters are served."""
    for crd in build_crds():
        await client.create(CRDS, crd)
    async with asyncio.timeout(10):
        while True:
            try:
                await client.list(RAY_CLUSTERS, namespace="default")
                return
            except NotFound:
                await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running_operator(
    *,
    kubelet: KubeletConfig = FAST_KUBELET,
    concurrency: int = 4,
    options: OperatorOptions | None = None,
    wrap_reconcile: Callable[[Any], Any] | None = None,
    operator_client_type: type[KubeClient] = KubeClient,
) -> AsyncIterator[OperatorEnv]:
    """Starts a control plane with CRDs and the operator; stops both on exit."""
    async with EmbeddedControlPlane(kubelet=kubelet) as cp:
        config = KubeConfig.for_server(cp.url, token=cp.token)
        async with (
            KubeClient(config, qps=-1) as user,
            operator_client_type(config) as operator_client,
        ):
            await install_crds(user)
            manager = Manager(
                operator_client,
                metrics=OperatorMetrics(CollectorRegistry()),
                metrics_bind_address="0",
                health_probe_bind_address="0",
                cache_config=KUBERAY_CACHE_CONFIG,
                leader_election=False,
            )
            controller = setup_raycluster_controller(
                manager, options=options or OperatorOptions(), max_concurrent_reconciles=concurrency
            )
            if wrap_reconcile is not None:
                controller._reconcile = wrap_reconcile(controller._reconcile)
            task = asyncio.create_task(manager.run())
            try:
                yield OperatorEnv(cp, user, manager, controller)
            finally:
                await manager.stop()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 10)
