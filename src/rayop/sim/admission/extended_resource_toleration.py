"""The ExtendedResourceToleration admission plugin: pods that request an extended resource
tolerate the taint of the nodes that offer it.

Clusters that taint their accelerator nodes with the resource's name (GKE: ``nvidia.com/gpu``,
``google.com/tpu``) run this plugin so that a pod requesting the resource need not spell the
toleration: on a pod's create, each extended resource its containers or init containers request
or limit gets a toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}`` unless the
pod already has one that covers it. kube-apiserver leaves it off unless enabled; so does the
embedded API server (``EmbeddedControlPlane(extended_resource_toleration=True)`` turns it on).
"""

from __future__ import annotations

from typing import Any

from rayop.apimachinery.objects import Obj

__all__ = ["add_extended_resource_tolerations", "is_extended_resource"]


def is_extended_resource(name: str) -> bool:
    """Tells whether a resource name is an extended resource (a domain-qualified name outside
    ``kubernetes.io``, and not a ``requests.`` quota name)."""
    domain, slash, _ = name.partition("/")
    if not slash or name.startswith("requests."):
        return False
    return domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _requested(spec: Obj) -> set[str]:
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            resources = container.get("resources") or {}
            for part in ("requests", "limits"):
                names.update(str(n) for n in (resources.get(part) or {}))
    return {n for n in names if is_extended_resource(n)}


def _covered(tolerations: list[Any], resource: str) -> bool:
    return any(
        isinstance(t, dict)
        and t.get("key") == resource
        and (t.get("operator") or "Equal") == "Exists"
        and (t.get("effect") or "") in ("", "NoSchedule")
        for t in tolerations
    )


def add_extended_resource_tolerations(pod: Obj) -> None:
    """Adds to a pod being created the tolerations of the extended resources it requests."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    tolerations = spec.get("tolerations")
    current: list[Any] = tolerations if isinstance(tolerations, list) else []
    missing = [r for r in sorted(_requested(spec)) if not _covered(current, r)]
    if missing:
        spec["tolerations"] = [
            *current,
            *({"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in missing),
        ]
