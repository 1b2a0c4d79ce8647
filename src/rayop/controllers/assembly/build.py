"""The one assembly path: :func:`build_operator` builds the manager and its controllers.

``rayop run`` and ``rayop up`` (through :func:`~rayop.controllers.assembly.run.run_operator`),
``rayop bench`` and :func:`rayop.testing.open_operator` all call it. For each blueprint of the
:data:`~rayop.controllers.assembly.catalog.CATALOG` the selection and gates start, it builds the
reconciler from the typed :class:`~rayop.controllers.assembly.blueprint.Wiring`, and gives every
controller, the secondary ones included, its worker count, ``auto`` and queue kind the same way:

- workers: ``--reconcile-concurrency`` (``settings.reconcile_concurrency``), or the blueprint's
  ``fixed_workers`` where KubeRay does not pass the flag to that controller;
- ``--reconcile-concurrency=auto``: every controller adapts between 1 and
  ``--max-reconcile-concurrency`` on its own metrics and the client's;
- metrics: under the controller's own name (the ``controller`` label).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from rayop.controllers.assembly.blueprint import ControllerBlueprint, Kind, Wiring
from rayop.controllers.assembly.catalog import CATALOG, KINDS
from rayop.controllers.assembly.kuberay_metrics import enable_kuberay_metrics
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.config.cache_config import KUBERAY_CACHE_CONFIG
from rayop.controllers.kit.own_writes import enqueue_when_caught_up
from rayop.kube.client import KubeClient
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.concurrency.law import LawSettings
from rayop.runtime.controller import Controller
from rayop.runtime.events.writer import EventClient
from rayop.runtime.informers.factory import CacheConfig
from rayop.runtime.manager import Manager
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reconcile import ReconcileFunc

ReconcileWrapper = Callable[[ReconcileFunc], ReconcileFunc]
"""Wraps a controller's reconcile function, e.g. to observe every call (tests)."""


@dataclass(frozen=True, slots=True)
class AssembledOperator:
    """A manager with its controllers registered (not yet running).

    Attributes:
        manager: The manager; ``await manager.run()`` runs everything.
        controllers: Every controller, by name, in registration order.
        primaries: The primary controller of each selected kind.
    """

    manager: Manager[KubeClient]
    controllers: Mapping[str, Controller]
    primaries: Mapping[Kind, Controller]


def build_operator(
    client: KubeClient,
    settings: OperatorSettings,
    metrics: OperatorMetrics,
    *,
    kinds: Collection[Kind] | None = None,
    clock: Clock = MONOTONIC,
    cache_config: CacheConfig = KUBERAY_CACHE_CONFIG,
    wrap_reconcile: ReconcileWrapper | None = None,
    event_client: EventClient | None = None,
) -> AssembledOperator:
    """Returns the manager with the selected controllers registered on it; never blocks.

    Args:
        client: The operator's API client (shared by everything).
        settings: The operator's flags and options.
        metrics: Where every controller's, queue's and the manager's series go.
        kinds: The kinds whose controllers run. None: ``rayop run``'s choice, every controller
            whose gate is on. A kind named here starts its primary controller whatever its gate
            (tests ask for RayCronJob so), and its secondary controllers only with theirs on.
        clock: The clock of the manager and everything it builds.
        cache_config: What the shared cache holds (KubeRay's label filters by default).
        wrap_reconcile: Wraps every controller's reconcile function.
        event_client: Where events are written; None: a client of their own on ``client``'s
            configuration (see :class:`~rayop.runtime.manager.Manager`).

    Raises:
        ValueError: ``kinds`` names a kind rayop has no controller for.
    """
    if kinds is not None and (unknown := set(kinds) - set(KINDS)):
        raise ValueError(f"no such controllers: {sorted(unknown)}; choose from {KINDS}")
    manager = Manager(
        client,
        metrics=metrics,
        metrics_bind_address=settings.metrics_addr,
        health_probe_bind_address=settings.health_probe_bind_address,
        leader_election=settings.enable_leader_election,
        leader_election_id=settings.leader_election_id,
        leader_election_namespace=settings.leader_election_namespace,
        watch_namespaces=list(settings.watch_namespaces) or None,
        cache_config=cache_config,
        clock=clock,
        event_client=event_client,
    )
    wiring = Wiring(manager, settings)
    controllers: dict[str, Controller] = {}
    primaries: dict[Kind, Controller] = {}
    for blueprint in selected(CATALOG, kinds, settings):
        controller = _build_controller(blueprint, wiring, wrap_reconcile)
        manager.add_controller(controller)
        controllers[blueprint.name] = controller
        if not blueprint.secondary:
            primaries[blueprint.kind] = controller
    if settings.enable_metrics:
        enable_kuberay_metrics(manager)
    return AssembledOperator(manager, controllers, primaries)


def selected(
    catalog: Collection[ControllerBlueprint],
    kinds: Collection[Kind] | None,
    settings: OperatorSettings,
) -> list[ControllerBlueprint]:
    """Returns the blueprints to build, in catalog order (see :func:`build_operator`'s ``kinds``)."""
    options = settings.options
    if kinds is None:
        return [b for b in catalog if b.gate(options)]
    return [b for b in catalog if b.kind in kinds and (not b.secondary or b.gate(options))]


def workers(blueprint: ControllerBlueprint, settings: OperatorSettings) -> int:
    """Returns how many workers ``blueprint``'s controller starts with (fixed concurrency)."""
    if blueprint.fixed_workers is not None:
        return blueprint.fixed_workers
    return settings.reconcile_concurrency


def _build_controller(
    blueprint: ControllerBlueprint, wiring: Wiring, wrap_reconcile: ReconcileWrapper | None
) -> Controller:
    wired = blueprint.build(wiring)
    settings = wiring.settings
    controller = Controller(
        blueprint.name,
        wired.reconcile if wrap_reconcile is None else wrap_reconcile(wired.reconcile),
        sources=wired.sources,
        max_concurrent_reconciles=workers(blueprint, settings),
        use_priority_queue=settings.use_priority_queue,
        metrics=wiring.manager.metrics,
        clock=wiring.clock,
    )
    if settings.adaptive_concurrency:
        law = LawSettings(floor=1, ceiling=settings.max_reconcile_concurrency)
        controller.adapt_concurrency(law, rest=wiring.client.metrics)
    if wired.own_writes is not None:
        enqueue_when_caught_up(wired.own_writes, controller)
    if wired.on_controller is not None:
        wired.on_controller(controller)
    return controller
