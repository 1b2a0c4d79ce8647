"""Wires the RayService controller into a manager (KubeRay's ``SetupWithManager``, §1.3).

The controller is named ``rayservice``. It watches RayServices with the predicates
``generation_changed | labels_changed | annotations_changed`` (its own status writes do not
trigger it), and the RayClusters and Services it controls (their owner is enqueued). It reads
pods and EndpointSlices from the shared cache. Its own RayService writes are tracked
(:class:`~rayop.runtime.own_writes.OwnWrites` on the RayService informer): a RayService whose
pass waited for the cache to show such a write is enqueued again as soon as it does.
"""

from __future__ import annotations

import random

from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.common.own_writes import enqueue_when_caught_up, track_own_writes
from rayop.controllers.common.registration import (
    SPEC_OR_METADATA_CHANGED,
    ray_watches,
    register_controller,
)
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.controllers.rayservice.context import RayServiceDeps
from rayop.controllers.rayservice.dashboards import DashboardFactory
from rayop.controllers.rayservice.reconciler import RayServiceReconciler
from rayop.controllers.rayservice.serve_cache import ServeConfigCache
from rayop.controllers.rayservice.settings import CONTROLLER_NAME, OWNER_KIND, REPORTING_CONTROLLER
from rayop.kube.client import KubeClient
from rayop.kube.resources import ENDPOINT_SLICES, PODS, RAY_CLUSTERS, RAY_SERVICES, SERVICES
from rayop.runtime.clock import Clock
from rayop.runtime.controller import Controller
from rayop.runtime.manager import Manager


def setup_rayservice_controller(
    manager: Manager,
    *,
    options: OperatorOptions,
    max_concurrent_reconciles: int,
    use_priority_queue: bool = True,
    use_kubernetes_proxy: bool = False,
    dashboard_resolver: ServiceResolver | None = None,
    clock: Clock | None = None,
) -> Controller:
    """Builds the ``rayservice`` controller, registers it on ``manager`` and returns it.

    Args:
        manager: The manager whose client (a KubeClient), shared informers and metrics are used.
        options: Operator settings (``OperatorOptions.from_env()`` in production).
        max_concurrent_reconciles: Worker count (``--reconcile-concurrency``).
        use_priority_queue: Use controller-runtime's priority queue (the default).
        use_kubernetes_proxy: Reach dashboards through the API server's services proxy
            (KubeRay's ``--use-kubernetes-proxy``); otherwise by the head service's DNS name.
        dashboard_resolver: Maps direct dashboard addresses where cluster DNS cannot (the
            embedded control plane); None: DNS resolves them.
        clock: Time source of requeues, status timestamps and deletion schedules (``now()``
            and ``wall()``); the manager's when None.
    """
    clock = manager.clock if clock is None else clock
    informers = manager.informers
    rayservices = informers.informer(RAY_SERVICES)
    clusters = informers.informer(RAY_CLUSTERS)
    services = informers.informer(SERVICES)
    own_writes = track_own_writes(rayservices, clock=clock)
    client = manager.client
    if not isinstance(client, KubeClient):
        raise TypeError("the RayService controller needs a rayop.kube.client.KubeClient")
    deps = RayServiceDeps(
        client=client,
        rayservices=rayservices,
        clusters=clusters,
        services=services,
        pods=informers.informer(PODS),
        endpoint_slices=informers.informer(ENDPOINT_SLICES),
        recorder=manager.event_recorder(REPORTING_CONTROLLER),
        options=options,
        dashboards=DashboardFactory(
            client,
            use_kubernetes_proxy=use_kubernetes_proxy,
            cluster_domain=options.cluster_domain,
            resolver=dashboard_resolver,
        ),
        serve_cache=ServeConfigCache(),
        own_writes=own_writes,
        clock=clock,
        rng=random.Random(),
    )
    controller = register_controller(
        manager,
        CONTROLLER_NAME,
        RayServiceReconciler(deps).reconcile,
        sources=ray_watches(
            rayservices,
            owner_kind=OWNER_KIND,
            owned=[clusters, services],
            predicates=[SPEC_OR_METADATA_CHANGED],
        ),
        max_concurrent_reconciles=max_concurrent_reconciles,
        use_priority_queue=use_priority_queue,
        clock=clock,
    )
    enqueue_when_caught_up(own_writes, controller)
    return controller
