"""Registers a Ray controller on a manager: the part of ``SetupWithManager`` every kind shares.

Each kind's ``setup`` module builds its reconciler and picks its watches; this module turns
them into a :class:`~rayop.runtime.controller.Controller` that uses the manager's metrics
registry and clock, and adds it to the manager (kuberay-v1.md §1.3: every controller gets the
same ``--reconcile-concurrency`` workers and queue kind).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rayop.api.common import GROUP
from rayop.runtime.clock import Clock
from rayop.runtime.controller import Controller
from rayop.runtime.informer_source import InformerLike, for_, owns
from rayop.runtime.manager import Manager
from rayop.runtime.predicate import (
    Predicate,
    annotations_changed,
    generation_changed,
    labels_changed,
    or_,
)
from rayop.runtime.reconcile import ReconcileFunc
from rayop.runtime.source import Source

SPEC_OR_METADATA_CHANGED: Final = or_(generation_changed, labels_changed, annotations_changed)
"""KubeRay's filter on the RayCluster and RayService watches: a status-only write (the
controller's own, above all) does not trigger a pass."""


def register_controller(
    manager: Manager,
    name: str,
    reconcile: ReconcileFunc,
    *,
    sources: Sequence[Source],
    max_concurrent_reconciles: int,
    use_priority_queue: bool = True,
    clock: Clock | None = None,
) -> Controller:
    """Builds a controller named ``name``, adds it to ``manager`` and returns it; never blocks.

    Args:
        manager: Provides the metrics registry and, unless ``clock`` is given, the clock.
        name: The controller's name (metrics labels, logs).
        reconcile: The reconcile function.
        sources: The watches that enqueue requests.
        max_concurrent_reconciles: Worker count (``--reconcile-concurrency``).
        use_priority_queue: controller-runtime's priority queue (default) or the classic one.
        clock: Time source of the queue and requeues; the manager's when None.
    """
    controller = Controller(
        name,
        reconcile,
        sources=sources,
        max_concurrent_reconciles=max_concurrent_reconciles,
        use_priority_queue=use_priority_queue,
        metrics=manager.metrics,
        clock=manager.clock if clock is None else clock,
    )
    manager.add_controller(controller)
    return controller


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
