"""The ownerReference that makes a Ray resource the controller of what it creates.

Every object a Ray controller creates (pods, services, clusters, submitter Jobs, RBAC objects)
points back at its Ray resource with one controller ownerReference that blocks the owner's
foreground deletion, so the garbage collector removes it with its owner and ``owns()`` watches
enqueue the owner.
"""

from __future__ import annotations

from typing import Any

from rayop.api.common import RayResource


def controller_reference(owner: RayResource) -> dict[str, Any]:
    """Returns the controller ownerReference pointing at ``owner``; never blocks."""
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": str(owner.metadata.get("uid", "")),
        "controller": True,
        "blockOwnerDeletion": True,
    }
