"""Helpers of the RayJob and RayService tests on the real control plane: rayop's three
controllers in-process, the pod network that plays Ray heads, and sample loading."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from rayop.cli.realcluster import pod_network_socket
from rayop.kube.client import KubeClient
from rayop.kube.config import load_config
from rayop.kube.resources import CONFIGMAPS, NAMESPACES
from rayop.testing import ALL_KINDS, open_operator
from tests.kuberay_compat import sample_docs

from .pod_network import PodNetwork
from .real_support import user_client

Obj = dict[str, Any]


def load_docs(file_name: str, kind: str) -> list[Obj]:
    """Returns the documents of one kind in a KubeRay sample file."""
    return [d for d in sample_docs(file_name) if d.get("kind") == kind]


@contextlib.asynccontextmanager
async def ray_world(kubeconfig: str, *, concurrency: int = 4) -> AsyncIterator[World]:
    """Runs the pod network and rayop's RayCluster, RayJob and RayService controllers (through
    the services proxy, ``--use-kubernetes-proxy``: this host cannot resolve the cluster's DNS
    names) until the block exits; yields a user view."""
    config = await load_config(kubeconfig=kubeconfig)
    async with (
        user_client(kubeconfig) as user,
        PodNetwork(user, pod_network_socket(Path(kubeconfig))) as network,
        open_operator(
            config,
            controllers=ALL_KINDS,
            concurrency=concurrency,
            ready_timeout=60,
            use_kubernetes_proxy=True,
        ),
    ):
        yield World(user, network)


class World:
    """The user's client and the simulated pod network of a running :func:`ray_world`."""

    def __init__(self, client: KubeClient, network: PodNetwork) -> None:
        self.client = client
        self.network = network

    async def namespace(self, name: str) -> str:
        """Creates a namespace and returns its name."""
        await self.client.create(NAMESPACES, {"metadata": {"name": name}})
        return name

    async def apply_config_maps(self, file_name: str, namespace: str) -> None:
        """Creates the ConfigMaps of a sample file (the scripts its pods mount)."""
        for doc in load_docs(file_name, "ConfigMap"):
            obj = copy.deepcopy(doc)
            obj["metadata"]["namespace"] = namespace
            await self.client.create(CONFIGMAPS, obj, namespace=namespace)

    def submissions(self, namespace: str) -> list[str]:
        """Submission ids the simulated heads of ``namespace`` accepted, in order."""
        return [sid for ns, _, sid in self.network.submissions if ns == namespace]
