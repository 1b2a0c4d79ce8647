"""Wire-form RayJobs and RayClusters for the RayJob unit tests."""

from __future__ import annotations

from typing import Any

from rayop.api.rayjob import RayJob

IMAGE = "rayproject/ray:2.52.0"


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
    return RayJob.model_validate(rayjob_wire(name, **spec))
