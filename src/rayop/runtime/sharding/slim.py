"""What the sharder keeps of a listed root: :func:`slim_root`.

The sharder lists roots every step (the unassigned and orphaned ones) and every root in a full
round. It reads little of each: name, namespace, uid and resourceVersion (its writes test the
version), labels, its own annotations (and whether there are others: a first annotation is
written as a whole map), the controlling ownerReference (is it a root?) and, through a root
kind's ``unreconciled`` predicate, whether a root has a status at all. Kept whole, a full round at
30,000 RayClusters holds every spec and status at once (some 200 MB in the replica that runs the
sharder); slimmed page by page as the list arrives, it holds one page whole and the rest as
these few fields. ``kubectl apply``'s ``last-applied-configuration`` annotation, a copy of the
whole spec, is among what is dropped.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from rayop.apimachinery.objects import ObjView as Obj

HAS_STATUS: Final[dict[str, Any]] = {"rayop.io/slim": "status not kept"}
"""A slim root's ``status`` when the object had a non-empty one: it tells only that (for a
kind's ``unreconciled`` predicate); an object without one keeps none."""

OTHER_ANNOTATIONS: Final[str] = "rayop.io/slim-other-annotations"
"""Present in a slim root's annotations when the object had annotations besides the kept ones
(their values are not kept; the sharder reads only that the map is not empty)."""

_KEPT_METADATA: Final[tuple[str, ...]] = ("name", "namespace", "uid", "resourceVersion", "labels")


def slim_root(
    obj: Obj, annotations: Collection[str] = (), kind: tuple[str, str] | None = None
) -> dict[str, Any]:
    """Returns what the sharder reads of ``obj`` (see the module docstring): its
    ``apiVersion`` and ``kind`` (``kind``'s pair instead when given: a metadata-only list's
    items are ``PartialObjectMetadata``), the kept metadata, the ``annotations`` asked for
    (plus :data:`OTHER_ANNOTATIONS` when there were others), its controlling ownerReference,
    and :data:`HAS_STATUS` for a non-empty status."""
    meta = obj.get("metadata") or {}
    kept: dict[str, Any] = {k: meta[k] for k in _KEPT_METADATA if k in meta}
    notes = meta.get("annotations") or {}
    if notes:
        mine = {k: notes[k] for k in annotations if k in notes}
        if len(mine) < len(notes):
            mine[OTHER_ANNOTATIONS] = ""
        kept["annotations"] = mine
    controller = [ref for ref in meta.get("ownerReferences") or () if ref.get("controller")]
    if controller:
        kept["ownerReferences"] = controller
    api_version, kind_name = kind or (obj.get("apiVersion"), obj.get("kind"))
    slim: dict[str, Any] = {"apiVersion": api_version, "kind": kind_name, "metadata": kept}
    if obj.get("status"):
        slim["status"] = HAS_STATUS
    return slim
