"""End-to-end support for RayCluster tests: samples, and the kit's plane and operator.

:func:`running_operator` starts the test kit's embedded control plane (fast kubelet, CRDs) and
rayop's operator with the RayCluster controller on it; tests act as users through the HTTP API
and observe the results in the plane's store and audit (see :class:`OperatorEnv`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.client import KubeClient
from rayop.kube.config import KubeConfig
from rayop.kube.resources import RAY_CLUSTERS
from rayop.runtime.controller import Controller
from rayop.runtime.reconcile import ReconcileFunc
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import FAST_KUBELET
from tests.kuberay_compat import sample_docs, samples_dir

from .operator_env import E2eEnv, open_env

GATED_SAMPLES: dict[str, str] = {
    "ray-cluster.historyserver.yaml": "RayClusterHistoryServer",
    "ray-cluster.mtls.yaml": "RayClusterMTLS",
    "ray-cluster.network-policy-deny-all.yaml": "RayClusterNetworkPolicy",
}
"""KubeRay samples that use a feature behind an alpha gate (off by default) -> that gate."""
SAMPLE_GATES = FeatureGates().with_overrides(dict.fromkeys(GATED_SAMPLES.values(), True))
"""The alpha gates of ``GATED_SAMPLES`` turned on (the mTLS sample also needs cert-manager's CRDs
on the plane and ``OperatorOptions.cert_manager_available``)."""

Obj = dict[str, Any]


class OperatorEnv(E2eEnv):
    """A running plane, a user client, and the operator's RayCluster controller."""

    @property
    def controller(self) -> Controller:
        """The running RayCluster controller."""
        assert self.running is not None, "the operator is not running"
        return self.running.controller("RayCluster")

    def pods(self, namespace: str, cluster: str, *, live_only: bool = True) -> list[Obj]:
        """Returns the stored pods of a RayCluster (without terminating ones by default)."""
        return self.plane.ray_pods(namespace, cluster, live_only=live_only)

    def raycluster(self, namespace: str, name: str) -> Obj | None:
        """Returns the stored RayCluster, or None."""
        return self.stored(RAY_CLUSTERS, namespace, name)

    def converged(self, namespace: str, name: str) -> bool:
        """Tells whether the RayCluster is ready as KubeRay reports it (state, conditions, pods)."""
        return self.plane.raycluster_converged(namespace, name)

    async def apply(self, raycluster: Obj, namespace: str) -> Obj:
        """Creates a RayCluster in ``namespace``."""
        return await self.plane.create(RAY_CLUSTERS, raycluster, namespace)

    async def edit(self, namespace: str, name: str, mutate: Callable[[Obj], None]) -> Obj:
        """Read-modify-writes a RayCluster, again on a conflict."""
        return await self.plane.edit(RAY_CLUSTERS, namespace, name, mutate)


def load_sample(file_name: str) -> list[Obj]:
    """Returns the RayCluster documents of a KubeRay sample file."""
    return [d for d in sample_docs(file_name) if d.get("kind") == "RayCluster"]


def sample_files() -> list[str]:
    """Returns the KubeRay sample files that contain a RayCluster."""
    return sorted(p.name for p in samples_dir().glob("ray-cluster*.yaml") if load_sample(p.name))


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


@contextlib.asynccontextmanager
async def running_operator(
    *,
    kubelet: KubeletConfig = FAST_KUBELET,
    concurrency: int = 4,
    options: OperatorOptions | None = None,
    wrap_reconcile: Callable[[ReconcileFunc], ReconcileFunc] | None = None,
    operator_client_type: Callable[[KubeConfig], KubeClient] = KubeClient,
) -> AsyncIterator[OperatorEnv]:
    """Starts a control plane with CRDs and the RayCluster controller; stops both on exit."""
    operator = {
        "concurrency": concurrency,
        "options": options,
        "wrap_reconcile": wrap_reconcile,
        "client_factory": operator_client_type,
    }
    async with open_env(OperatorEnv, plane={"kubelet": kubelet}, operator=operator) as env:
        yield env
