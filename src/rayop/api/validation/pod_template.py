"""Reading a pod template of a cluster spec as KubeRay's checks do (wire JSON, tolerant)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["containers", "env", "env_var", "template_spec"]


def template_spec(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """Returns a template's ``spec`` ({} when absent)."""
    spec = template.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def containers(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Returns a template's containers (the Ray container first)."""
    items = template_spec(template).get("containers")
    if not isinstance(items, list):
        return []
    return [c if isinstance(c, Mapping) else {} for c in items]


def env(container: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Returns a container's env entries."""
    items = container.get("env")
    return [e for e in items if isinstance(e, Mapping)] if isinstance(items, list) else []


def env_var(name: str, entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Returns the env entry called ``name``, or None (KubeRay's ``EnvVarExists``)."""
    return next((e for e in entries if e.get("name") == name), None)
