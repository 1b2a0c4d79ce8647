"""The watches of a Ray controller: its own kind and the kinds it owns.

Each kind's ``blueprint`` module picks its sources with :func:`ray_watches` (KubeRay's
``For(...).Owns(...)`` in each controller's ``SetupWithManager``) and the predicate
:data:`SPEC_OR_METADATA_CHANGED` where KubeRay filters status-only updates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rayop.api.common import GROUP
from rayop.runtime.informers.sources import InformerLike, for_, owns
from rayop.runtime.predicate import (
    Predicate,
    annotations_changed,
    generation_changed,
    labels_changed,
    or_,
)
from rayop.runtime.source import Source

SPEC_OR_METADATA_CHANGED: Final = or_(generation_changed, labels_changed, annotations_changed)
"""KubeRay's filter on the RayCluster and RayService watches: a status-only write (the
controller's own, above all) does not trigger a pass."""


def ray_watches(
    primary: InformerLike,
    *,
    owner_kind: str,
    owned: Sequence[InformerLike],
    predicates: Sequence[Predicate] = (),
) -> list[Source]:
    """Returns the watches of a Ray controller; never blocks.

    Args:
        primary: The informer of the controller's own kind; each change enqueues that object.
        owner_kind: The controller's kind (``RayCluster``, ``RayJob``, ``RayService``).
        owned: Informers of the kinds it creates; a change enqueues the controlling
            ``ray.io`` owner of kind ``owner_kind``.
        predicates: Filters on the primary's events (e.g. :data:`SPEC_OR_METADATA_CHANGED`).
    """
    return [for_(primary, *predicates), *(owns(i, owner_kind, GROUP) for i in owned)]
