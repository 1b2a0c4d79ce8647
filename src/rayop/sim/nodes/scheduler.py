"""The simulated scheduler's placement: fake nodes, node choice by kube-scheduler's filters, pod IPs.

Nodes are created with the configured capacity, labels and taints (users may change them later,
``kubectl taint`` or ``label``: the Node objects are what is read). A pod goes to the next node,
round-robin, that passes the filters of :mod:`rayop.apimachinery.scheduling`; what each bound,
unfinished pod requests is counted against its node, and a pod is counted ("assumed", as
kube-scheduler does) from the moment it is placed, before its binding is written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.pod_requests import pod_requests
from rayop.apimachinery.scheduling import NodeView, fit_message, node_problems
from rayop.sim.machinery import kube_version
from rayop.sim.machinery.timestamps import timestamp
from rayop.sim.nodes.node_specs import DEFAULT_NODE_CAPACITY, NodePool, NodeSpec
from rayop.sim.storage.store import Store

__all__ = ["DEFAULT_NODE_CAPACITY", "NodePool", "NodeSpec", "Placement"]


class Placement:
    """Chooses nodes and allocates pod IPs (10.1.0.1 onwards) for the simulated kubelet.

    Args:
        node_names: The fake nodes' names, in the order pods are spread over them.
        capacity: Each node's capacity (and allocatable).
        labels: Labels every node gets besides the standard ones.
        taints: Taints every node gets.
        pools: Further nodes, with their own labels, capacity and taints.
        nodes: Further single nodes (from Node manifests); one named like an earlier node
            replaces it.
    """

    def __init__(
        self,
        node_names: list[str],
        *,
        capacity: Mapping[str, str] = DEFAULT_NODE_CAPACITY,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, Any]] = (),
        pools: Sequence[NodePool] = (),
        nodes: Sequence[NodeSpec] = (),
    ) -> None:
        self.node_names: list[str] = []
        self._specs: dict[str, NodeSpec] = {}
        plain = [
            NodeSpec(name=name, labels=labels or {}, capacity=capacity, taints=tuple(taints))
            for name in node_names
        ]
        for spec in [*plain, *(s for pool in pools for s in pool.node_specs()), *nodes]:
            if spec.name not in self._specs:
                self.node_names.append(spec.name)
            self._specs[spec.name] = spec
        self.nodes: dict[str, NodeView] = {}
        self._usage: dict[str, tuple[str, dict[str, Fraction]]] = {}
        self._used_ips: set[str] = set()
        self._next_ip = 0
        self._next_node = 0

    def host_ip(self, node: str) -> str:
        """Returns the InternalIP of a node (that of the first node for an unknown name)."""
        index = self.node_names.index(node) if node in self.node_names else 0
        return f"192.168.0.{10 + index % 240}"

    # -- what the nodes hold -------------------------------------------------------------

    def observe_node(self, event_type: str, node: Obj) -> None:
        """Keeps the view of a Node object current (its pods' requests are kept)."""
        name = str((node.get("metadata") or {}).get("name") or "")
        old = self.nodes.pop(name, None)
        if event_type == "DELETED":
            return
        view = NodeView.of(node)
        if old is not None:
            view.requested, view.pods = old.requested, old.pods
        self.nodes[name] = view

    def observe_pod(self, event_type: str, pod: Obj) -> None:
        """Counts a bound, unfinished pod's requests on its node; uncounts it when it ends."""
        md = pod.get("metadata") or {}
        uid = str(md.get("uid") or "")
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        phase = (pod.get("status") or {}).get("phase")
        ended = event_type == "DELETED" or phase in ("Succeeded", "Failed")
        held = self._usage.get(uid)
        if ended or (not node and held is None):
            self.release(uid)
            return
        if held is not None and (not node or held[0] == node):
            return
        self.release(uid)
        self._hold(uid, node, pod_requests(pod))

    def _hold(self, uid: str, node: str, requests: dict[str, Fraction]) -> None:
        self._usage[uid] = (node, requests)
        view = self.nodes.get(node)
        if view is not None:
            view.pods += 1
            for name, value in requests.items():
                view.requested[name] = view.requested.get(name, Fraction(0)) + value

    def release(self, uid: str) -> None:
        """Stops counting a pod (it ended, went away, or its placement was abandoned)."""
        held = self._usage.pop(uid, None)
        if held is None:
            return
        view = self.nodes.get(held[0])
        if view is not None:
            view.pods -= 1
            for name, value in held[1].items():
                view.requested[name] = view.requested.get(name, Fraction(0)) - value

    def choose(self, pod: Obj) -> tuple[str | None, str]:
        """Places a pod: returns (node, "") and counts it there, or (None, the FitError text)."""
        order = [n for n in self.node_names if n in self.nodes] + sorted(
            n for n in self.nodes if n not in self.node_names
        )
        requests = pod_requests(pod)
        problems: dict[str, tuple[list[str], bool]] = {}
        for offset in range(len(order)):
            name = order[(self._next_node + offset) % len(order)]
            reasons, resolvable = node_problems(pod, self.nodes[name], requests)
            if not reasons:
                self._next_node += offset + 1
                uid = str((pod.get("metadata") or {}).get("uid") or "")
                self.release(uid)
                self._hold(uid, name, requests)
                return name, ""
            problems[name] = (reasons, resolvable)
        return None, fit_message(problems)

    # -- IPs and Node objects ------------------------------------------------------------

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
            node = _node_object(self._specs[name], self.host_ip(name), timestamp(now))
            with contextlib.suppress(Exception):
                await store.create(nodes, "", node)
            stored = store.peek(nodes, "", name)
            if stored is not None and not (stored.get("status") or {}).get("allocatable"):
                # a create drops the status, as the API server does; a kubelet then reports it
                with contextlib.suppress(Exception):
                    await store.update(
                        nodes, "", name, dict(stored, status=node["status"]), subresource="status"
                    )
        for node in store.list(nodes)[0]:
            self.observe_node("ADDED", node)


def _node_object(spec: NodeSpec, ip: str, now: str) -> Obj:
    name = spec.name
    metadata: Obj = {
        "name": name,
        "labels": {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "sim",
            **spec.labels,
        },
    }
    if spec.annotations:
        metadata["annotations"] = dict(spec.annotations)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {"taints": [dict(t) for t in spec.taints]} if spec.taints else {},
        "status": {
            "capacity": dict(spec.capacity),
            "allocatable": spec.allocatable_resources(),
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
                "kubeletVersion": kube_version.GIT_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "sim://1.0",
            },
        },
    }
