"""Nodes and claims KubeRay's samples need to be scheduled, as a cloud cluster would offer them.

The embedded scheduler places pods as kube-scheduler does: a sample whose pods select TPU or GPU
nodes (``nodeSelector``), request extended resources (``google.com/tpu``, ``nvidia.com/gpu``) or
mount a claim stays Pending on plain nodes. :func:`sample_node_pools` returns one node pool per
distinct node selector the samples' pod templates use, with room for the extended resources they
request (what a node-pool autoscaler would provide); :func:`sample_claims` returns the
PersistentVolumeClaims a sample file defines beside its RayCluster (applied with it, as
``kubectl apply -f`` would).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.sim.nodes.scheduler import DEFAULT_NODE_CAPACITY, NodePool
from rayop.testing import FAST_KUBELET

Obj = dict[str, Any]
_BASIC = {"cpu", "memory", "ephemeral-storage", "pods"}


def _documents(path: Path) -> list[Obj]:
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]


_CLUSTER_SPEC = {"RayCluster": None, "RayJob": "rayClusterSpec", "RayService": "rayClusterConfig"}


def _templates(doc: Obj) -> Iterable[Obj]:
    """Yields the pod templates of a RayCluster, or of the cluster a RayJob or RayService makes."""
    if doc.get("kind") not in _CLUSTER_SPEC:
        return
    spec = doc.get("spec") or {}
    key = _CLUSTER_SPEC[str(doc["kind"])]
    if key is not None:
        spec = spec.get(key) or {}
    yield (spec.get("headGroupSpec") or {}).get("template") or {}
    for group in spec.get("workerGroupSpecs") or []:
        yield (group or {}).get("template") or {}


def sample_node_pools(files: Iterable[Path]) -> tuple[NodePool, ...]:
    """Returns node pools on which every RayCluster pod of the sample files can be scheduled."""
    pools: dict[tuple[tuple[str, str], ...], set[str]] = {}
    for path in files:
        for doc in _documents(path):
            for template in _templates(doc):
                spec = template.get("spec") or {}
                selector = tuple(
                    sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())
                )
                extended = pools.setdefault(selector, set())
                for container in spec.get("containers") or []:
                    resources = (container or {}).get("resources") or {}
                    for key in {
                        **(resources.get("limits") or {}),
                        **(resources.get("requests") or {}),
                    }:
                        if key not in _BASIC:
                            extended.add(str(key))
    out: list[NodePool] = []
    for index, (selector, extended) in enumerate(sorted(pools.items())):
        if not selector and not extended:
            continue  # the default nodes serve these
        capacity = {**DEFAULT_NODE_CAPACITY, **dict.fromkeys(sorted(extended), "1k")}
        name = "-".join(re.sub(r"[^a-z0-9]+", "-", v.lower()) for _, v in selector)[:40].strip("-")
        out.append(
            NodePool(
                name=f"pool{index}-{name}".rstrip("-"), labels=dict(selector), capacity=capacity
            )
        )
    return tuple(out)


def sample_kubelet(files: Iterable[Path], base: KubeletConfig = FAST_KUBELET) -> KubeletConfig:
    """Returns ``base`` with :func:`sample_node_pools` of the sample files added."""
    return dataclasses.replace(base, node_pools=sample_node_pools(files))


def sample_claims(path: Path) -> list[Obj]:
    """Returns the PersistentVolumeClaims a sample file defines."""
    return [d for d in _documents(path) if d.get("kind") == "PersistentVolumeClaim"]
