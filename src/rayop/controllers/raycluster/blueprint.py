"""The ``raycluster`` controller and its two secondary controllers, described once.

:data:`RAYCLUSTER` is KubeRay's RayCluster controller. It watches RayClusters with the
predicates ``generation_changed | labels_changed | annotations_changed`` (its own status writes
do not trigger it) and the Pods, Services, Secrets and PersistentVolumeClaims it owns (their
controlling owner is enqueued; a pod's binding to a node is not passed on, as no step reads what
it changes); a PVC also enqueues the clusters naming it as their GCS storage ``claimName``.
Scale expectations read the shared pod cache.

:data:`NETWORK_POLICY` (``networkpolicy``, gate ``RayClusterNetworkPolicy``) and :data:`MTLS`
(``raycluster-mtls``, gate ``RayClusterMTLS`` with cert-manager served) run beside it, as
KubeRay's ``ray-operator/main.go`` starts them; KubeRay gives the mTLS controller
controller-runtime's default of one worker.
"""

from __future__ import annotations

from rayop.api.common import GROUP
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.assembly.blueprint import ControllerBlueprint, Wired, Wiring
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit.own_writes import track_own_writes
from rayop.controllers.kit.watches import SPEC_OR_METADATA_CHANGED, ray_watches
from rayop.controllers.raycluster.context import ReconcilerDeps
from rayop.controllers.raycluster.events import REPORTING_CONTROLLER
from rayop.controllers.raycluster.gcs_storage import claim_requests
from rayop.controllers.raycluster.group_creates import GroupCreates
from rayop.controllers.raycluster.mtls import names as mtls_names
from rayop.controllers.raycluster.mtls import sync as mtls_sync
from rayop.controllers.raycluster.network_policy import NETWORK_POLICIES
from rayop.controllers.raycluster.network_policy_sync import (
    CONTROLLER_NAME as NETWORK_POLICY_CONTROLLER,
)
from rayop.controllers.raycluster.network_policy_sync import (
    REPORTING_CONTROLLER as NETWORK_POLICY_REPORTER,
)
from rayop.controllers.raycluster.network_policy_sync import NetworkPolicySync
from rayop.controllers.raycluster.pod_sync import forget_cluster
from rayop.controllers.raycluster.reconciler import RayClusterReconciler
from rayop.kube.resources import PERSISTENT_VOLUME_CLAIMS, PODS, RAY_CLUSTERS, SECRETS, SERVICES
from rayop.runtime.controller import Controller
from rayop.runtime.expectations import ScaleExpectations, pod_observer
from rayop.runtime.informers.sources import for_, owns, watches
from rayop.runtime.predicate import generation_changed, not_pod_binding
from rayop.runtime.reconcile import Request
from rayop.runtime.unchanged_passes import UnchangedPasses, note_request

CONTROLLER_NAME = "raycluster"
OWNER_KIND = "RayCluster"


def _build_raycluster(wiring: Wiring) -> Wired:
    informers = wiring.informers
    clusters = informers.informer(RAY_CLUSTERS)
    pods = informers.informer(PODS)
    services = informers.informer(SERVICES)
    secrets = informers.informer(SECRETS)
    pvcs = informers.informer(PERSISTENT_VOLUME_CLAIMS)

    def pod_lookup(namespace: str, name: str) -> Obj | None:
        return pods.get(namespace, name)

    own_writes = track_own_writes(clusters, clock=wiring.clock)
    expectations = ScaleExpectations(pod_lookup, clock=wiring.clock)
    pods.add_event_handler(pod_observer(expectations))
    group_creates = GroupCreates(expectations)
    wiring.add_closer("raycluster group creates", group_creates.close)
    deps = ReconcilerDeps(
        client=wiring.client,
        clusters=clusters,
        pods=pods,
        services=services,
        informers=informers,
        recorder=wiring.recorder(REPORTING_CONTROLLER),
        expectations=expectations,
        own_writes=own_writes,
        options=wiring.options,
        clock=wiring.clock,
        pod_call_concurrency=wiring.settings.pod_create_concurrency,
        group_creates=group_creates,
        unchanged=(
            UnchangedPasses(lambda: sum(i.changes for i in informers.informers))
            if getattr(wiring.client, "on_request", None) is note_request
            else None  # a pass's requests are not counted: every pass runs
        ),
    )

    def let_creators_enqueue(controller: Controller) -> None:
        group_creates.on_done = controller.enqueue

    async def forget(request: Request) -> None:
        if deps.unchanged is not None:
            deps.unchanged.forget(request)
        await forget_cluster(deps, request.namespace, request.name)

    return Wired(
        reconcile=RayClusterReconciler(deps).reconcile,
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
        own_writes=own_writes,
        on_controller=let_creators_enqueue,
        forget=forget,
    )


def _build_network_policy(wiring: Wiring) -> Wired:
    clusters = wiring.informers.informer(RAY_CLUSTERS)
    policies = wiring.informers.informer(NETWORK_POLICIES)
    sync = NetworkPolicySync(
        client=wiring.client,
        clusters=clusters,
        policies=policies,
        recorder=wiring.recorder(NETWORK_POLICY_REPORTER),
    )
    return Wired(
        reconcile=sync.reconcile,
        sources=[for_(clusters, generation_changed), owns(policies, OWNER_KIND, GROUP)],
    )


def _build_mtls(wiring: Wiring) -> Wired:
    informers = wiring.informers
    clusters = informers.informer(RAY_CLUSTERS)
    issuers = informers.informer(mtls_names.ISSUERS)
    certificates = informers.informer(mtls_names.CERTIFICATES)
    sync = mtls_sync.MTLSSync(
        client=wiring.client,
        clusters=clusters,
        issuers=issuers,
        certificates=certificates,
        pods=informers.informer(PODS),
        recorder=wiring.recorder(mtls_sync.REPORTING_CONTROLLER),
        gates=wiring.options.feature_gates,
        cluster_domain=wiring.options.cluster_domain,
        clock=wiring.clock,
    )
    return Wired(
        reconcile=sync.reconcile,
        sources=[
            for_(clusters),
            owns(issuers, OWNER_KIND, GROUP),
            owns(certificates, OWNER_KIND, GROUP),
        ],
    )


def _network_policy_on(options: OperatorOptions) -> bool:
    return options.feature_gates.ray_cluster_network_policy


def _mtls_on(options: OperatorOptions) -> bool:
    # Without cert-manager the Issuer and Certificate caches could never sync (KubeRay's check).
    return options.feature_gates.ray_cluster_mtls and options.cert_manager_available


RAYCLUSTER = ControllerBlueprint(name=CONTROLLER_NAME, kind="RayCluster", build=_build_raycluster)

NETWORK_POLICY = ControllerBlueprint(
    name=NETWORK_POLICY_CONTROLLER,
    kind="RayCluster",
    build=_build_network_policy,
    gate=_network_policy_on,
    secondary=True,
)

MTLS = ControllerBlueprint(
    name=mtls_sync.CONTROLLER_NAME,
    kind="RayCluster",
    build=_build_mtls,
    gate=_mtls_on,
    secondary=True,
    fixed_workers=1,  # KubeRay's: controller-runtime's default MaxConcurrentReconciles
)
