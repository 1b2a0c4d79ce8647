"""Node pool presets: GKE GPU nodes and TPU slices as GKE labels, taints and sizes them.

``--node-pool PRESET[:COUNT]`` adds COUNT copies (1 by default) of a preset: COUNT nodes of a
GPU preset, COUNT slices of a TPU preset (a multi-host slice is one pool of its hosts, as GKE
makes it). Every node carries GKE's node-pool and machine labels, its accelerator labels
(``cloud.google.com/gke-accelerator``, or ``cloud.google.com/gke-tpu-accelerator`` and
``cloud.google.com/gke-tpu-topology``), GKE's taint on accelerator nodes (``nvidia.com/gpu`` or
``google.com/tpu``, value ``present``, NoSchedule) and the machine type's vCPUs, memory and
accelerators as its capacity and allocatable. GKE adds the tolerations of those taints to pods
that request the accelerator (the ExtendedResourceToleration admission plugin, which the
embedded API server turns on with node pools).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rayop.sim.nodes.node_specs import NodePool

__all__ = ["PRESETS", "NodePreset", "NodePresetError", "preset_pools"]

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}


class NodePresetError(ValueError):
    """A ``PRESET[:COUNT]`` names no preset or a bad count."""


@dataclass(frozen=True, kw_only=True)
class NodePreset:
    """One GKE node pool shape: its machine type, accelerator and (for TPUs) its slice."""

    machine_type: str
    cpu: str
    memory: str
    accelerator: str
    """``nvidia.com/gpu`` or ``google.com/tpu``."""
    per_host: int
    """Accelerators (GPUs, TPU chips) on each node."""
    labels: Mapping[str, str]
    hosts: int = 1
    """Nodes in one copy: the hosts of a TPU slice; 1 for a GPU node."""

    def pool(self, name: str, *, count: int) -> NodePool:
        """Returns ``count`` nodes of this shape named ``<name>-<i>``."""
        family = self.machine_type.partition("-")[0]
        labels = {
            "cloud.google.com/gke-nodepool": name,
            "cloud.google.com/machine-family": family,
            "node.kubernetes.io/instance-type": self.machine_type,
            **self.labels,
        }
        return NodePool(
            name=name,
            count=count,
            labels=labels,
            capacity={
                "cpu": self.cpu,
                "memory": self.memory,
                "pods": "110",
                "ephemeral-storage": "100Gi",
                self.accelerator: str(self.per_host),
            },
            taints=(GPU_TAINT if self.accelerator == "nvidia.com/gpu" else TPU_TAINT,),
        )


def _gpu(machine_type: str, cpu: str, memory: str, gpu: str, per_host: int) -> NodePreset:
    return NodePreset(
        machine_type=machine_type,
        cpu=cpu,
        memory=memory,
        accelerator="nvidia.com/gpu",
        per_host=per_host,
        labels={"cloud.google.com/gke-accelerator": gpu},
    )


def _tpu(machine_type: str, cpu: str, memory: str, slice_type: str, topology: str) -> NodePreset:
    chips = 1
    for side in topology.split("x"):
        chips *= int(side)
    return NodePreset(
        machine_type=machine_type,
        cpu=cpu,
        memory=memory,
        accelerator="google.com/tpu",
        per_host=min(chips, 4),
        hosts=max(1, chips // 4),
        labels={
            "cloud.google.com/gke-tpu-accelerator": slice_type,
            "cloud.google.com/gke-tpu-topology": topology,
        },
    )


_V6E_4X4 = _tpu("ct6e-standard-4t", "180", "720G", "tpu-v6e-slice", "4x4")

PRESETS: Mapping[str, NodePreset] = {
    "nvidia-tesla-t4": _gpu("n1-standard-64", "64", "240G", "nvidia-tesla-t4", 4),
    "nvidia-l4": _gpu("g2-standard-48", "48", "192G", "nvidia-l4", 4),
    "tpu-v4-2x2x1": _tpu("ct4p-hightpu-4t", "240", "407G", "tpu-v4-podslice", "2x2x1"),
    "tpu-v4-2x2x2": _tpu("ct4p-hightpu-4t", "240", "407G", "tpu-v4-podslice", "2x2x2"),
    "tpu-v6e-2x2": _tpu("ct6e-standard-4t", "180", "720G", "tpu-v6e-slice", "2x2"),
    "tpu-v6e-4x4": _V6E_4X4,
    "tpu-v6e-16": _V6E_4X4,
}
"""The presets by name (``tpu-v6e-16`` is ``tpu-v6e-4x4`` by its chip count)."""


def preset_pools(value: str) -> tuple[NodePool, ...]:
    """Returns the pools of ``PRESET[:COUNT]``: one of COUNT nodes for a single-host preset,
    COUNT pools (slices) of its hosts for a multi-host TPU preset.

    Raises:
        NodePresetError: no such preset, or COUNT is not a positive integer.
    """
    name, _, count_text = value.partition(":")
    preset = PRESETS.get(name.strip())
    if preset is None:
        raise NodePresetError(
            f"node pool preset {name.strip()!r} is unknown (known: {', '.join(sorted(PRESETS))})"
        )
    try:
        count = int(count_text) if count_text else 1
    except ValueError:
        count = 0
    if count < 1:
        raise NodePresetError(f"node pool {value!r}: COUNT must be a positive integer")
    name = name.strip()
    if preset.hosts == 1:
        return (preset.pool(name, count=count),)
    return tuple(preset.pool(f"{name}-{i}", count=preset.hosts) for i in range(count))
