"""Request bodies the CEL and ResourceQuota tests send (the fast tier's and the real tier's):
a minimal RayCluster, a pod with given requests and limits, a ResourceQuota."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def raycluster(name: str = "rc", **spec: Any) -> Obj:
    """A RayCluster with a head group only; ``spec`` adds fields (``managedBy=...``)."""
    template = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.52.0"}]}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": template}, **spec},
    }


def pod(
    name: str, *, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
) -> Obj:
    """A one-container pod (container ``c``) with the given requests and limits."""
    resources: Obj = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    container = {"name": "c", "image": "busybox", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


def resource_quota(name: str, **hard: str) -> Obj:
    """A ResourceQuota with ``spec.hard`` (names such as ``requests.cpu`` go in a ``**`` dict)."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name},
        "spec": {"hard": hard},
    }
