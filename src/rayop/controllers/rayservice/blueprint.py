"""The ``rayservice`` controller, described once (:data:`RAYSERVICE`).

KubeRay's RayService controller. It watches RayServices with the predicates
``generation_changed | labels_changed | annotations_changed`` (its own status writes do not
trigger it), and the RayClusters and Services it controls (their owner is enqueued). It reads
pods, EndpointSlices (their cache made on the first read, as controller-runtime does) and
the Ray auth token Secrets from the shared cache. Its own RayService writes are tracked
(:class:`~rayop.runtime.own_writes.OwnWrites` on the RayService informer): a RayService whose
pass waited for the cache to show such a write is enqueued again as soon as it does.
"""

from __future__ import annotations

import random

from rayop.controllers.assembly.blueprint import ControllerBlueprint, Wired, Wiring
from rayop.controllers.kit.own_writes import track_own_writes
from rayop.controllers.kit.watches import SPEC_OR_METADATA_CHANGED, ray_watches
from rayop.controllers.rayservice.context import RayServiceDeps
from rayop.controllers.rayservice.dashboards import DashboardFactory
from rayop.controllers.rayservice.reconciler import RayServiceReconciler
from rayop.controllers.rayservice.serve_cache import ServeConfigCache
from rayop.controllers.rayservice.settings import CONTROLLER_NAME, OWNER_KIND, REPORTING_CONTROLLER
from rayop.kube.resources import (
    ENDPOINT_SLICES,
    PODS,
    RAY_CLUSTERS,
    RAY_SERVICES,
    SECRETS,
    SERVICES,
)
from rayop.runtime.informers.on_demand import OnDemandCache


def _build(wiring: Wiring) -> Wired:
    informers = wiring.informers
    rayservices = informers.informer(RAY_SERVICES)
    clusters = informers.informer(RAY_CLUSTERS)
    services = informers.informer(SERVICES)
    own_writes = track_own_writes(rayservices, clock=wiring.clock)
    deps = RayServiceDeps(
        client=wiring.client,
        rayservices=rayservices,
        clusters=clusters,
        services=services,
        pods=informers.informer(PODS),
        endpoint_slices=OnDemandCache.of(informers, ENDPOINT_SLICES),
        secrets=informers.informer(SECRETS),
        recorder=wiring.recorder(REPORTING_CONTROLLER),
        options=wiring.options,
        dashboards=DashboardFactory(
            wiring.client,
            use_kubernetes_proxy=wiring.settings.use_kubernetes_proxy,
            cluster_domain=wiring.options.cluster_domain,
            resolver=wiring.settings.dashboard_resolver,
        ),
        serve_cache=ServeConfigCache(),
        own_writes=own_writes,
        clock=wiring.clock,
        rng=random.Random(),
    )
    return Wired(
        reconcile=RayServiceReconciler(deps).reconcile,
        sources=ray_watches(
            rayservices,
            owner_kind=OWNER_KIND,
            owned=[clusters, services],
            predicates=[SPEC_OR_METADATA_CHANGED],
        ),
        own_writes=own_writes,
    )


RAYSERVICE = ControllerBlueprint(name=CONTROLLER_NAME, kind="RayService", build=_build)
