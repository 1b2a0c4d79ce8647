"""What the simulated kubelet makes its Node objects from: one node's spec, a pool of like nodes.

A :class:`NodeSpec` is one node as the kubelet registers it (labels, annotations, taints,
capacity and allocatable); a :class:`NodePool` is a group of identical nodes, named
``<name>-0`` .. ``<name>-<count-1>``. Presets (:mod:`rayop.sim.nodes.node_presets`) and Node
manifests (:mod:`rayop.sim.nodes.node_manifests`) turn into these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_NODE_CAPACITY", "NodePool", "NodeSpec"]


DEFAULT_NODE_CAPACITY: Mapping[str, str] = {
    "cpu": "100k",
    "memory": "1Pi",
    "pods": "1M",
    "ephemeral-storage": "1Pi",
}
"""Each simulated node's capacity unless configured: large, so that load tests never run out."""


@dataclass(frozen=True, kw_only=True)
class NodeSpec:
    """One node as the simulated kubelet registers it.

    ``allocatable`` None means the whole capacity is allocatable.
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_NODE_CAPACITY))
    allocatable: Mapping[str, str] | None = None
    taints: tuple[Mapping[str, Any], ...] = ()

    def allocatable_resources(self) -> dict[str, str]:
        """Returns what pods may request of the node (its capacity unless set apart)."""
        return dict(self.capacity if self.allocatable is None else self.allocatable)


@dataclass(frozen=True, kw_only=True)
class NodePool:
    """A group of identical extra nodes (GPU nodes, a TPU slice, a tainted pool...).

    Nodes are named ``<name>-0`` .. ``<name>-<count-1>``.
    """

    name: str
    count: int = 1
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_NODE_CAPACITY))
    taints: tuple[Mapping[str, Any], ...] = ()

    def node_names(self) -> list[str]:
        """Returns the pool's node names."""
        return [f"{self.name}-{i}" for i in range(max(0, self.count))]

    def node_specs(self) -> list[NodeSpec]:
        """Returns the pool's nodes."""
        return [
            NodeSpec(name=name, labels=self.labels, capacity=self.capacity, taints=self.taints)
            for name in self.node_names()
        ]
