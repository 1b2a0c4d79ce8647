"""Wire-form RayJobs and RayClusters for the RayJob unit tests."""

from __future__ import annotations

from typing import Any

from rayop.api.rayjob import RayJob

IMAGE = "rayproject/ray:2.52.0"
CLUSTER = "job-abcde"
"""The name of the RayJob's cluster in the tests."""
DASHBOARD_URL = f"{CLUSTER}-head-svc.ns.svc.cluster.local:8266"


def rayjob_wire(name: str = "job", **spec: Any) -> dict[str, Any]:
    """Returns a RayJob in wire form with a small cluster spec."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "ns", "uid": "uid-1", "labels": {"team": "a"}},
        "spec": {
            "entrypoint": "python main.py",
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "ray-head",
                                    "image": IMAGE,
                                    "ports": [{"name": "dashboard", "containerPort": 8266}],
                                }
                            ]
                        }
                    },
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "w",
                        "replicas": 1,
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [{"name": "w", "image": IMAGE}]}},
                    }
                ],
            },
            **spec,
        },
    }


def rayjob(name: str = "job", **spec: Any) -> RayJob:
    """Returns the parsed RayJob."""
    return parsed(rayjob_wire(name, **spec))


def parsed(wire: dict[str, Any]) -> RayJob:
    """Returns ``wire`` parsed, as a pass parses it."""
    return RayJob.model_validate(wire)


def owned_cluster(state: str = "ready", **extra: Any) -> dict[str, Any]:
    """Returns the RayJob's cluster as the cache holds it (controlled by the RayJob uid-1)."""
    meta = {
        "name": CLUSTER,
        "namespace": "ns",
        "ownerReferences": [{"kind": "RayJob", "uid": "uid-1", "controller": True}],
        **extra,
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": meta,
        "spec": rayjob_wire()["spec"]["rayClusterSpec"],
        "status": {"state": state},
    }


def head_service() -> dict[str, Any]:
    """Returns the cluster's head Service, with the dashboard port."""
    return {
        "metadata": {"name": f"{CLUSTER}-head-svc", "namespace": "ns"},
        "spec": {"ports": [{"name": "dashboard", "port": 8266}]},
    }
