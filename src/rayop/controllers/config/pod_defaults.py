"""The fleet-wide pod defaults of KubeRay's Configuration, and how KubeRay puts them on pods.

:class:`PodDefaults` holds ``headSidecarContainers``, ``workerSidecarContainers``,
``defaultContainerEnvs``, ``defaultPodLabels`` and ``defaultPodAnnotations`` in wire form; it
travels in :class:`~rayop.controllers.config.options.OperatorOptions`, so every pod builder sees
it. The three functions apply it exactly where and as KubeRay v1.7.0's ``buildHeadPod``,
``buildWorkerPod`` and ``setContainerEnvVars`` do:

- sidecars are appended after the pod's containers (after the autoscaler sidecar on a head);
- default labels and annotations are added to the pod's metadata only under keys it does not
  have yet, so the user's template and KubeRay's own labels win;
- default env vars go on the Ray container (the first) only, after the user's and KubeRay's
  earlier env vars, skipping a name already there, and before the env vars KubeRay adds in
  ``setContainerEnvVars``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

from rayop.apimachinery.objects import Obj

__all__ = ["PodDefaults", "add_default_envs", "add_default_metadata", "add_sidecars"]


@dataclass(frozen=True, kw_only=True)
class PodDefaults:
    """What a Configuration adds to every Ray pod (wire-form dicts; empty: nothing)."""

    head_sidecars: tuple[Obj, ...] = ()
    """``headSidecarContainers``: appended to every head pod's containers."""
    worker_sidecars: tuple[Obj, ...] = ()
    """``workerSidecarContainers``: appended to every worker pod's containers."""
    container_envs: tuple[Obj, ...] = ()
    """``defaultContainerEnvs``: added to every Ray container."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """``defaultPodLabels``: added to every Ray pod; the pod's own labels win."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """``defaultPodAnnotations``: added to every Ray pod; the pod's own annotations win."""

    def __bool__(self) -> bool:
        return bool(
            self.head_sidecars
            or self.worker_sidecars
            or self.container_envs
            or self.labels
            or self.annotations
        )


NO_POD_DEFAULTS = PodDefaults()
"""No Configuration (or one without pod defaults)."""


def add_sidecars(spec: Obj, defaults: PodDefaults, *, node_type: str) -> None:
    """Appends the head's or the workers' sidecars (copies) to ``spec["containers"]``."""
    sidecars = defaults.head_sidecars if node_type == "head" else defaults.worker_sidecars
    if sidecars:
        spec.setdefault("containers", []).extend(copy.deepcopy(list(sidecars)))


def add_default_metadata(metadata: Obj, defaults: PodDefaults) -> None:
    """Adds default labels and annotations under the keys ``metadata`` does not have yet."""
    for key, values in (("labels", defaults.labels), ("annotations", defaults.annotations)):
        if not values:
            continue
        current = metadata.get(key)
        if current is None:
            current = metadata[key] = {}
        for name, value in values.items():
            current.setdefault(name, value)


def add_default_envs(container: Obj, defaults: PodDefaults) -> None:
    """Appends each default env var (a copy) whose name the container's env does not have."""
    if not defaults.container_envs:
        return
    env = container.get("env")
    if env is None:
        env = container["env"] = []
    for default in defaults.container_envs:
        if not any(e.get("name") == default["name"] for e in env):
            env.append(copy.deepcopy(default))
