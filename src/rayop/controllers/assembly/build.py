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

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass

from rayop.controllers.assembly.blueprint import ControllerBlueprint, Kind, Wired, Wiring
from rayop.controllers.assembly.catalog import CATALOG, KINDS
from rayop.controllers.assembly.decision_events import record_waits_as_events
from rayop.controllers.assembly.kuberay_metrics import enable_kuberay_metrics
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.sharding import (
    KEYS,
    SHARDER_CONTROLLER,
    SHARDER_LEASE_SUFFIX,
    RootFinder,
    install_sharding,
    lease_timing,
    sharded_cache,
)
from rayop.controllers.config.cache_config import KUBERAY_CACHE_CONFIG
from rayop.controllers.kit.own_writes import enqueue_when_caught_up
from rayop.kube.client import KubeClient
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.concurrency.law import LawSettings
from rayop.runtime.controller import Controller
from rayop.runtime.decisions import note_client_write
from rayop.runtime.events.writer import EventClient
from rayop.runtime.informers.factory import CacheConfig
from rayop.runtime.leaderelection import DEFAULT_LEADER_ELECTION
from rayop.runtime.manager import Manager, default_lease_namespace
from rayop.runtime.metrics import OperatorMetrics
from rayop.runtime.reconcile import ReconcileFunc, Request
from rayop.runtime.sharding.gate import ShardGate
from rayop.runtime.sharding.metrics import ShardMetrics
from rayop.runtime.sharding.pass_record import PassRecord
from rayop.runtime.unchanged_passes import note_request

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
    sharding = settings.sharding
    if sharding is not None and not settings.enable_leader_election:
        raise ValueError("--sharding needs leader election: the elected replica assigns objects")
    manager = Manager(
        client,
        metrics=metrics,
        metrics_bind_address=settings.metrics_addr,
        health_probe_bind_address=settings.health_probe_bind_address,
        leader_election=settings.enable_leader_election,
        leader_election_id=settings.leader_election_id
        + (SHARDER_LEASE_SUFFIX if sharding is not None else ""),
        leader_election_namespace=settings.leader_election_namespace,
        leader_election_settings=(
            lease_timing(sharding) if sharding is not None else DEFAULT_LEADER_ELECTION
        ),
        watch_namespaces=list(settings.watch_namespaces) or None,
        cache_config=(
            sharded_cache(cache_config, sharding.replica_id)
            if sharding is not None
            else cache_config
        ),
        clock=clock,
        event_client=event_client,
    )
    if isinstance(client, KubeClient) and client.on_write is None:
        client.on_write = note_client_write  # each pass's account names the writes it sent
    if isinstance(client, KubeClient) and client.on_request is None:
        client.on_request = note_request  # a pass that sent none may be repeated unchanged
    wiring = Wiring(manager, settings)
    blueprints = selected(CATALOG, kinds, settings)
    gate = _install_sharding(manager, settings, blueprints) if sharding is not None else None
    controllers: dict[str, Controller] = {}
    primaries: dict[Kind, Controller] = {}
    for blueprint in blueprints:
        controller = _build_controller(blueprint, wiring, wrap_reconcile, gate)
        manager.add_controller(controller, need_leader_election=gate is None)
        controllers[blueprint.name] = controller
        if not blueprint.secondary:
            primaries[blueprint.kind] = controller
    if settings.enable_metrics:
        enable_kuberay_metrics(manager)
    if settings.decision_events:
        record_waits_as_events(manager, {b.kind for b in blueprints})
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


def _install_sharding(
    manager: Manager[KubeClient],
    settings: OperatorSettings,
    blueprints: Collection[ControllerBlueprint],
) -> tuple[ShardGate, RootFinder]:
    sharding = settings.sharding
    assert sharding is not None
    record = PassRecord(sharding.pass_record) if sharding.pass_record else None
    gate = ShardGate(
        sharding.replica_id,
        KEYS,
        manager.client,
        caught_up=manager.informers.delivered,
        metrics=ShardMetrics(manager.metrics.registry),
        record=record,
        clock=manager.clock,
    )
    parts = install_sharding(
        client=manager.client,
        informers=manager.informers,
        kinds=sorted({b.kind for b in blueprints}),
        settings=sharding,
        namespace=settings.leader_election_namespace or default_lease_namespace(),
        gate=gate,
        watch_namespaces=settings.watch_namespaces,
        events=manager.event_recorder(SHARDER_CONTROLLER),
        add_runnable=manager.add_runnable,
        add_start_gate=manager.add_start_gate,
        lease_timing=lease_timing(sharding),
        lease_client=manager.lease_client,
        sharder_client=manager.client_of_its_own(
            qps=sharding.sharder_qps, burst=sharding.sharder_burst
        ),
        clock=manager.clock,
    )
    manager.add_closer("shard gate", gate.close)
    return gate, parts.finder


def _forgetting(wired: Wired) -> Callable[[Request], Awaitable[None] | None]:
    own_writes, forget = wired.own_writes, wired.forget

    def forget_all(request: Request) -> Awaitable[None] | None:
        if own_writes is not None:
            own_writes.forget({"metadata": {"namespace": request.namespace, "name": request.name}})
        return None if forget is None else forget(request)

    return forget_all


def _build_controller(
    blueprint: ControllerBlueprint,
    wiring: Wiring,
    wrap_reconcile: ReconcileWrapper | None,
    gate: tuple[ShardGate, RootFinder] | None = None,
) -> Controller:
    wired = blueprint.build(wiring)
    settings = wiring.settings
    reconcile = wired.reconcile if wrap_reconcile is None else wrap_reconcile(wired.reconcile)
    if gate is not None:
        shard_gate, finder = gate
        resolve = finder.resolver(blueprint.kind)
        reconcile = shard_gate.wrap(
            blueprint.name, resolve, reconcile, forget=_forgetting(wired),
            resource=finder.resource(blueprint.kind),
        )  # fmt: skip
    controller = Controller(
        blueprint.name,
        reconcile,
        sources=wired.sources,
        max_concurrent_reconciles=workers(blueprint, settings),
        use_priority_queue=settings.use_priority_queue,
        metrics=wiring.manager.metrics,
        clock=wiring.clock,
        decisions=wiring.manager.decisions,
        kind=blueprint.kind,
    )
    if settings.adaptive_concurrency:
        law = LawSettings(floor=1, ceiling=settings.max_reconcile_concurrency)
        controller.adapt_concurrency(law, rest=wiring.client.metrics)
    if wired.own_writes is not None:
        enqueue_when_caught_up(wired.own_writes, controller)
    if wired.on_controller is not None:
        wired.on_controller(controller)
    if gate is not None:
        gate[0].set_enqueue(blueprint.name, controller.enqueue)
    return controller
