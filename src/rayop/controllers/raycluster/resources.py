"""Pod resource arithmetic as KubeRay does it: a pod's resources, its GPUs, a memory limit.

Quantities themselves (parse, add, format) are :mod:`rayop.apimachinery.quantity`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rayop.apimachinery.quantity import (
    Quantity,
    ResourceList,
    container_requests,
    sum_resource_lists,
)

_GPU_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def is_gpu_resource(name: str) -> bool:
    """Tells whether a resource name counts as a GPU for KubeRay (``*gpu`` or NVIDIA MIG)."""
    return name.endswith("gpu") or bool(_GPU_MIG.search(name))


def pod_resources(pod_spec: Mapping[str, Any]) -> ResourceList:
    """Sums the requests of a pod spec's containers (not init containers), as KubeRay does."""
    return sum_resource_lists(map(container_requests, pod_spec.get("containers") or []))


def memory_size_limit(container: Mapping[str, Any]) -> str | None:
    """Returns the container's memory limit, else its request, in canonical form; None if neither."""
    res = container.get("resources") or {}
    for key in ("limits", "requests"):
        value = (res.get(key) or {}).get("memory")
        if value is not None:
            return Quantity.parse(value).canonical()
    return None
