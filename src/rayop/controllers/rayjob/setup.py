"""Wires the RayJob controller into a manager (KubeRay's ``SetupWithManager``, §1.3).

The controller is named ``rayjob``. It watches RayJobs with no predicate (so its own status
writes trigger the next pass, which moves the state machine along at once) and the RayClusters,
Services and batch Jobs it owns (their controlling RayJob is enqueued). Its own writes of a
RayJob are tracked (:mod:`rayop.controllers.common.own_writes`): a pass never works from a cached
RayJob older than them, and the RayJob is enqueued again when the cache shows them. Time is the
manager's clock.
"""

from __future__ import annotations

from typing import cast

from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.common.own_writes import enqueue_when_caught_up, track_own_writes
from rayop.controllers.common.registration import ray_watches, register_controller
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.controllers.rayjob.context import (
    Cache,
    RayJobDeps,
    dashboard_factory,
)
from rayop.controllers.rayjob.reconciler import RayJobReconciler
from rayop.kube.client import KubeClient
from rayop.kube.resources import JOBS, PODS, RAY_CLUSTERS, RAY_JOBS, SECRETS, SERVICES
from rayop.runtime.controller import Controller
from rayop.runtime.manager import Manager

CONTROLLER_NAME = "rayjob"
REPORTING_CONTROLLER = "rayjob-controller"
OWNER_KIND = "RayJob"


def setup_rayjob_controller(
    manager: Manager,
    *,
    options: OperatorOptions,
    max_concurrent_reconciles: int,
    use_priority_queue: bool = True,
    use_kubernetes_proxy: bool = False,
    dashboard_resolver: ServiceResolver | None = None,
) -> Controller:
    """Builds the ``rayjob`` controller, registers it on ``manager`` and returns it.

    Args:
        manager: The manager whose client, shared informers, metrics and clock (queue,
            requeues, status timestamps, deadlines, TTLs) are used.
        options: Operator settings (``OperatorOptions.from_env()`` in production).
        max_concurrent_reconciles: Worker count (``--reconcile-concurrency``).
        use_priority_queue: Use controller-runtime's priority queue (the default).
        use_kubernetes_proxy: Reach dashboards through the API server's services proxy
            (KubeRay's ``--use-kubernetes-proxy``); otherwise directly at ``dashboardURL``.
        dashboard_resolver: Maps direct dashboard addresses where cluster DNS cannot (the
            embedded control plane); None: DNS resolves them.
    """
    informers = manager.informers
    rayjobs = informers.informer(RAY_JOBS)
    clusters = informers.informer(RAY_CLUSTERS)
    services = informers.informer(SERVICES)
    jobs = informers.informer(JOBS)
    client = cast(KubeClient, manager.client)
    own_writes = track_own_writes(rayjobs, clock=manager.clock)
    deps = RayJobDeps(
        client=client,
        rayjobs=cast(Cache, rayjobs),
        clusters=cast(Cache, clusters),
        jobs=cast(Cache, jobs),
        services=cast(Cache, services),
        pods=cast(Cache, informers.informer(PODS)),
        secrets=cast(Cache, informers.informer(SECRETS)),
        own_writes=own_writes,
        recorder=manager.event_recorder(REPORTING_CONTROLLER),
        options=options,
        dashboards=dashboard_factory(
            client, use_kubernetes_proxy=use_kubernetes_proxy, resolver=dashboard_resolver
        ),
        clock=manager.clock,
    )
    controller = register_controller(
        manager,
        CONTROLLER_NAME,
        RayJobReconciler(deps).reconcile,
        sources=ray_watches(rayjobs, owner_kind=OWNER_KIND, owned=[clusters, services, jobs]),
        max_concurrent_reconciles=max_concurrent_reconciles,
        use_priority_queue=use_priority_queue,
    )
    enqueue_when_caught_up(own_writes, controller)
    return controller
