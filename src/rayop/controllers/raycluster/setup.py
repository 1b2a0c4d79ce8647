"""Wires the RayCluster controller into a manager (KubeRay's ``SetupWithManager``, §1.3).

The controller is named ``raycluster``. It watches RayClusters with the predicates
``generation_changed | labels_changed | annotations_changed`` (its own status writes do not
trigger it) and the Pods, Services, Secrets and PersistentVolumeClaims it owns (their
controlling owner is enqueued; a pod's binding to a node is not passed on, as no step reads
what it changes); a PVC also enqueues the clusters naming it as their GCS storage
``claimName``.
Scale expectations read the shared pod cache. With the ``RayClusterNetworkPolicy`` gate on, the
``networkpolicy`` controller (:mod:`~rayop.controllers.raycluster.network_policy_sync`) is
registered beside it, as KubeRay's ``main.go`` does; so is the ``raycluster-mtls`` controller
(:mod:`~rayop.controllers.raycluster.mtls.sync`) with ``RayClusterMTLS`` on and cert-manager
served.
"""

from __future__ import annotations

from typing import cast

from rayop.api.common import GROUP
from rayop.controllers.common import cluster_spec as cs
from rayop.controllers.common import settings
from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.common.own_writes import enqueue_when_caught_up, track_own_writes
from rayop.controllers.common.registration import (
    SPEC_OR_METADATA_CHANGED,
    ray_watches,
    register_controller,
)
from rayop.controllers.raycluster.events import REPORTING_CONTROLLER
from rayop.controllers.raycluster.gcs_storage import claim_requests
from rayop.controllers.raycluster.mtls.sync import setup_mtls_controller
from rayop.controllers.raycluster.network_policy_sync import setup_network_policy_controller
from rayop.controllers.raycluster.reconcile_context import ReconcilerDeps
from rayop.controllers.raycluster.reconciler import RayClusterReconciler
from rayop.kube.client import KubeClient
from rayop.kube.resources import PERSISTENT_VOLUME_CLAIMS, PODS, RAY_CLUSTERS, SECRETS, SERVICES
from rayop.runtime.controller import Controller
from rayop.runtime.expectations import ScaleExpectations
from rayop.runtime.indexer import Obj
from rayop.runtime.informer_source import owns, watches
from rayop.runtime.manager import Manager
from rayop.runtime.predicate import not_pod_binding

CONTROLLER_NAME = "raycluster"
OWNER_KIND = "RayCluster"


def setup_raycluster_controller(
    manager: Manager,
    *,
    options: OperatorOptions,
    max_concurrent_reconciles: int,
    use_priority_queue: bool = True,
    pod_call_concurrency: int = settings.POD_CALL_CONCURRENCY,
) -> Controller:
    """Builds the ``raycluster`` controller, registers it on ``manager`` and returns it.

    Args:
        manager: The manager whose client, shared informers, metrics and clock are used.
        options: Operator settings (``OperatorOptions.from_env()`` in production).
        max_concurrent_reconciles: Worker count (``--reconcile-concurrency``).
        use_priority_queue: Use controller-runtime's priority queue (the default).
        pod_call_concurrency: Pod create/delete calls of one group in flight at once.
    """
    informers = manager.informers
    clusters = informers.informer(RAY_CLUSTERS)
    pods = informers.informer(PODS)
    services = informers.informer(SERVICES)
    secrets = informers.informer(SECRETS)
    pvcs = informers.informer(PERSISTENT_VOLUME_CLAIMS)

    def pod_lookup(namespace: str, name: str) -> Obj | None:
        return pods.get(namespace, name)

    own_writes = track_own_writes(clusters, clock=manager.clock)

    deps = ReconcilerDeps(
        client=cast(KubeClient, manager.client),
        clusters=clusters,
        pods=pods,
        services=services,
        informers=informers,
        recorder=manager.event_recorder(REPORTING_CONTROLLER),
        expectations=ScaleExpectations(pod_lookup, clock=manager.clock),
        own_writes=own_writes,
        options=options,
        clock=manager.clock,
        pod_call_concurrency=pod_call_concurrency,
    )
    controller = register_controller(
        manager,
        CONTROLLER_NAME,
        RayClusterReconciler(deps).reconcile,
        sources=[
            *ray_watches(
                clusters,
                owner_kind=OWNER_KIND,
                owned=[services, secrets, pvcs],
                predicates=[SPEC_OR_METADATA_CHANGED],
            ),
            # As KubeRay's Owns(&corev1.Pod{}), less a pod's binding to a node: no step reads
            # spec.nodeName or the PodScheduled condition, so that pass could change nothing.
            owns(pods, OWNER_KIND, GROUP, not_pod_binding),
            watches(pvcs, lambda pvc: claim_requests(clusters.list(cs.namespace(pvc)), pvc)),
        ],
        max_concurrent_reconciles=max_concurrent_reconciles,
        use_priority_queue=use_priority_queue,
    )
    enqueue_when_caught_up(own_writes, controller)
    if options.feature_gates.ray_cluster_network_policy:
        setup_network_policy_controller(
            manager,
            max_concurrent_reconciles=max_concurrent_reconciles,
            use_priority_queue=use_priority_queue,
        )
    if options.feature_gates.ray_cluster_mtls and options.cert_manager_available:
        setup_mtls_controller(
            manager,
            gates=options.feature_gates,
            cluster_domain=options.cluster_domain,
            max_concurrent_reconciles=1,  # KubeRay's: controller-runtime's default
            use_priority_queue=use_priority_queue,
        )
    return controller
