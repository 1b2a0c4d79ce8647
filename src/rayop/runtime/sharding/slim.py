"""What the sharder keeps of a listed root: :func:`slim_root`.

The sharder lists roots every step (the unassigned and orphaned ones) and every root in a full
round. It reads their metadata only (name, namespace, uid, resourceVersion, labels, annotations,
ownerReferences) and, through a root kind's ``unreconciled`` predicate, whether a root has a
status at all. Kept whole, a full round at 30,000 RayClusters holds every spec and status at
once (some 200 MB in the replica that runs the sharder); slimmed page by page as the list
arrives, it holds one page whole and the rest as metadata.
"""

from __future__ import annotations

from typing import Any, Final

from rayop.apimachinery.objects import ObjView as Obj

HAS_STATUS: Final[dict[str, Any]] = {"rayop.io/slim": "status not kept"}
"""A slim root's ``status`` when the object had a non-empty one: it tells only that (for a
kind's ``unreconciled`` predicate); an object without one keeps none."""


def slim_root(obj: Obj) -> dict[str, Any]:
    """Returns ``obj``'s ``apiVersion``, ``kind`` and metadata without ``managedFields``; its
    spec is dropped, and a non-empty status becomes :data:`HAS_STATUS`."""
    meta = obj.get("metadata") or {}
    slim: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: v for k, v in meta.items() if k != "managedFields"},
    }
    if obj.get("status"):
        slim["status"] = HAS_STATUS
    return slim
