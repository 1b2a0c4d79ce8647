"""The simulated scheduler's placement: fake nodes, round-robin node choice and pod IPs.

Nothing is ever refused for lack of room: node selectors, affinities, tolerations and resource
requests are recorded on the pod but do not block placement (the kubelet's
``unschedulable_rate`` fault is the only way to leave a pod unscheduled).
"""

from __future__ import annotations

import contextlib
from typing import Any

from rayop.sim.machinery.timestamps import timestamp
from rayop.sim.storage.store import Store

__all__ = ["Placement"]

Obj = dict[str, Any]


class Placement:
    """Chooses nodes and allocates pod IPs (10.1.0.1 onwards) for the simulated kubelet.

    Args:
        node_names: The fake nodes' names, in the order pods are spread over them.
    """

    def __init__(self, node_names: list[str]) -> None:
        self.node_names = node_names
        self._used_ips: set[str] = set()
        self._next_ip = 0
        self._next_node = 0

    def host_ip(self, node: str) -> str:
        """Returns the InternalIP of a node (that of the first node for an unknown name)."""
        index = self.node_names.index(node) if node in self.node_names else 0
        return f"192.168.0.{10 + index % 240}"

    def pick_node(self) -> str:
        """Returns the next node, round-robin."""
        node = self.node_names[self._next_node % len(self.node_names)]
        self._next_node += 1
        return node

    def note_ip(self, ip: str) -> None:
        """Marks an IP already held by a stored pod as used."""
        if ip:
            self._used_ips.add(ip)

    def allocate_ip(self) -> str:
        """Returns an unused pod IP."""
        while True:
            self._next_ip += 1
            n = self._next_ip + (1 << 16)  # 10.1.0.1 onwards
            ip = f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
            if n & 255 not in (0, 255) and ip not in self._used_ips:
                self._used_ips.add(ip)
                return ip

    async def create_nodes(self, store: Store, now: float) -> None:
        """Creates the Node objects that are missing (never blocks for long)."""
        nodes = store.resources.get("", "v1", "nodes")
        if nodes is None:
            return
        for name in self.node_names:
            with contextlib.suppress(Exception):
                await store.create(
                    nodes, "", _node_object(name, self.host_ip(name), timestamp(now))
                )


def _node_object(name: str, ip: str, now: str) -> Obj:
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "1000", "ephemeral-storage": "1Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "sim",
            },
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "sim kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.32.0-sim",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "sim://1.0",
            },
        },
    }
