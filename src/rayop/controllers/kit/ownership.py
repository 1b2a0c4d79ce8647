"""The ownerReference that makes a Ray resource the controller of what it creates.

Every object a Ray controller creates (pods, services, clusters, submitter Jobs, RBAC objects)
points back at its Ray resource with one controller ownerReference that blocks the owner's
foreground deletion, so the garbage collector removes it with its owner and ``owns()`` watches
enqueue the owner. And the delete precondition that deletes only the very object a controller
read (:func:`uid_precondition`), not one recreated under its name since.
"""

from __future__ import annotations

from collections.abc import Mapping
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


def uid_precondition(obj: Mapping[str, Any]) -> dict[str, str] | None:
    """Returns ``{"uid": <obj's uid>}`` as a delete's preconditions (None without a uid): an
    object recreated under the name since ``obj`` was read gets a 409 instead of being
    deleted; never blocks."""
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    return {"uid": uid} if uid else None
