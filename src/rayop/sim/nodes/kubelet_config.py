"""The simulated kubelet's settings: timings, failure rates, and the nodes it runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rayop.sim.nodes.node_specs import DEFAULT_NODE_CAPACITY, NodePool, NodeSpec

__all__ = ["KubeletConfig"]


@dataclass(frozen=True, kw_only=True)
class KubeletConfig:
    """Timing and failure settings of the simulated kubelet (all times in seconds)."""

    pending_delay: float = 0.0
    """From creation until the pod is scheduled and reported Pending with its IP."""
    running_delay: float = 0.1
    """From Pending until the containers run (phase Running)."""
    ready_delay: float = 0.1
    """From Running until the pod is Ready (plus readiness initialDelaySeconds x factor)."""
    jitter: float = 0.0
    """Up to this many seconds are added at random to each of the delays above."""
    failure_rate: float = 0.0
    """Fraction of pods that end in phase Failed instead of running."""
    crashloop_rate: float = 0.0
    """Fraction of pods whose first container crash-loops (CrashLoopBackOff, never Ready)."""
    readiness_probe_factor: float = 0.0
    """Multiplies readinessProbe.initialDelaySeconds to delay Ready (0: probes add nothing)."""
    job_duration: float | None = 1.0
    """How long a Job's pod runs before it succeeds; None: until :meth:`Kubelet.complete_pod`."""
    job_failure_rate: float = 0.0
    """Fraction of Job pods that end Failed instead of Succeeded."""
    unschedulable_rate: float = 0.0
    """Fraction of pods left Pending with PodScheduled False, reason Unschedulable."""
    delete_delay: float = 0.05
    """Upper bound of how long a gracefully deleted pod stays visible (capped by its grace)."""
    crashloop_backoff: float = 10.0
    """Base of the crash-loop restart back-off (doubles per restart, at most 300 s)."""
    seed: int | None = None
    """Seed of the random outcomes (None: unpredictable)."""
    nodes: int = 3
    """How many fake nodes pods are spread over."""
    node_prefix: str = "sim-node-"
    """Node names are this prefix followed by 0..nodes-1."""
    node_capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_NODE_CAPACITY))
    """Each node's capacity and allocatable (cpu, memory, pods, extended resources...)."""
    node_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels every node gets besides kubernetes.io/hostname, os and arch."""
    node_taints: tuple[Mapping[str, Any], ...] = ()
    """Taints every node gets (``{"key": ..., "value": ..., "effect": "NoSchedule"}``)."""
    node_pools: tuple[NodePool, ...] = ()
    """Further nodes with labels, capacity and taints of their own (GPU or TPU nodes...)."""
    extra_nodes: tuple[NodeSpec, ...] = ()
    """Further single nodes, as Node manifests describe them (``--node-file``)."""
    real_ray: bool = False
    """Run every pod's containers as local processes with the local Ray (``--real-ray``)."""
    ray_env: str | None = None
    """With ``real_ray``: a virtualenv holding Ray (None: ``$RAYOP_RAY_ENV`` or rayop's own)."""

    def node_names(self) -> list[str]:
        """Returns the fake nodes' names."""
        return [f"{self.node_prefix}{i}" for i in range(max(1, self.nodes))]
