"""Shared fixtures: KubeRay sample RayClusters (tests/kuberay_compat.py) as the API server returns them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rayop.api.raycluster import RayCluster, WorkerGroupSpec
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.pods import build_head_pod, build_worker_pod
from rayop.controllers.raycluster.scaling import GroupPlan, plan_worker_group
from rayop.controllers.raycluster.spec_hash import spec_hash
from rayop.controllers.raycluster.status import calculate_status
from tests.kuberay_compat import sample_docs


def load_sample(name: str, *, namespace: str = "default", uid: str = "uid-1") -> dict[str, Any]:
    """Loads a RayCluster sample and adds the metadata the API server would set."""
    cluster: dict[str, Any] = next(d for d in sample_docs(name) if d.get("kind") == "RayCluster")
    cluster["metadata"].update({"namespace": namespace, "uid": uid, "generation": 1})
    return cluster


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """Returns a container's env as name -> value (or valueFrom)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def minimal_cluster(**spec: Any) -> dict[str, Any]:
    """Returns a small hand-written RayCluster with one worker group."""
    base: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "u-1", "generation": 3},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2"}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "replicas": 2,
                    "minReplicas": 0,
                    "maxReplicas": 5,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w", "image": "ray:2"}]}},
                }
            ],
        },
    }
    base["spec"].update(spec)
    return base


# -- the builders on wire dicts (they take the parsed model; tests write dicts) -------------------


def parse(cluster: Mapping[str, Any]) -> RayCluster:
    """Parses a RayCluster wire dict as the reconciler does once per pass."""
    return RayCluster.model_validate(cluster)


def group_model(group: Mapping[str, Any]) -> WorkerGroupSpec:
    """Parses one ``workerGroupSpecs`` entry."""
    return WorkerGroupSpec.model_validate(group)


def head_pod(cluster: Mapping[str, Any], *, options: OperatorOptions) -> dict[str, Any]:
    """Builds the head pod of a wire cluster, with the hash of its wire spec."""
    return build_head_pod(parse(cluster), options=options, spec_hash=spec_hash(cluster))


def worker_pod(
    cluster: Mapping[str, Any], group: Mapping[str, Any], *, options: OperatorOptions, **kw: Any
) -> dict[str, Any]:
    """Builds one worker pod of a wire group of a wire cluster."""
    return build_worker_pod(parse(cluster), group_model(group), options=options, **kw)


def worker_plan(
    cluster: Mapping[str, Any], group: Mapping[str, Any], pods: Sequence[Any], **kw: Any
) -> GroupPlan:
    """Plans one wire group of a wire cluster."""
    return plan_worker_group(parse(cluster), group_model(group), pods, **kw)


def status_of(
    cluster: Mapping[str, Any], pods: Sequence[Any], services: Sequence[Any], **kw: Any
) -> dict[str, Any]:
    """Computes the status of a wire cluster (its current status is the starting point)."""
    return calculate_status(parse(cluster), cluster.get("status"), pods, services, **kw)
