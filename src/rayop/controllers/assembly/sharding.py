"""Sharding wired for Ray: which objects are roots, where their objects live, how a request
finds its root, and :func:`install_sharding`, which :func:`~rayop.controllers.assembly.build.build_operator`
calls with ``--sharding`` on (the machinery is :mod:`rayop.runtime.sharding`).

Roots: every RayJob, RayService and RayCronJob, and a RayCluster that no RayJob or RayService
of a running controller owns (a RayJob is no root when a RayCronJob owns it). Everything the
operator creates during a pass gets ``rayop.io/shard`` (the replica) and ``rayop.io/shard-root``
(the root's UID) from the client (:attr:`~rayop.kube.client.KubeClient.create_labels`), so it
follows its root; each replica's informers select ``rayop.io/shard=<replica>`` except for the
resources the operator reads but does not create (EndpointSlices, cert-manager Issuers).
The sharder runs in the elected leader (leader Lease ``<leader-election-id>-sharder``, so that
a replica without ``--sharding`` never shares a Lease with sharded ones); every replica observes
the membership Leases all along, so that a replica elected after a leader failed already knows
how long each Lease has gone unrenewed (a dead replica's roots move within one Lease duration of
its last renewal, not two).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.assembly.blueprint import Kind
from rayop.controllers.assembly.operator_settings import ShardingSettings
from rayop.controllers.batchscheduler.kubernetes_was import PODGROUPS as WAS_PODGROUPS
from rayop.controllers.batchscheduler.scheduler_plugins import PODGROUPS as PLUGIN_PODGROUPS
from rayop.controllers.batchscheduler.volcano import PODGROUPS as VOLCANO_PODGROUPS
from rayop.controllers.raycluster.mtls.names import CERTIFICATES, ISSUERS
from rayop.controllers.raycluster.network_policy import NETWORK_POLICIES
from rayop.controllers.raycluster.route import ROUTES
from rayop.controllers.raycronjob.reconciler import RAY_CRON_JOBS
from rayop.controllers.rayservice.incremental.gateway import GATEWAYS, HTTP_ROUTES
from rayop.kube.client import KubeClient
from rayop.kube.resource import Resource
from rayop.kube.resources import (
    CONFIGMAPS,
    ENDPOINT_SLICES,
    INGRESSES,
    JOBS,
    LEASES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    RAY_CLUSTERS,
    RAY_JOBS,
    RAY_SERVICES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.events.recorder import EventSink
from rayop.runtime.informers.factory import CacheConfig, InformerFactory
from rayop.runtime.leaderelection import (
    DEFAULT_LEADER_ELECTION,
    LeaderElectionSettings,
    LeaderElector,
)
from rayop.runtime.reconcile import Request
from rayop.runtime.sharding.gate import Resolver, Root, ShardGate
from rayop.runtime.sharding.keys import ShardKeys
from rayop.runtime.sharding.membership import (
    Membership,
    hold_membership,
    member_elector,
    observe_membership,
)
from rayop.runtime.sharding.sharder import RootKind, Sharder

KEYS = ShardKeys(
    shard="rayop.io/shard",
    drain="rayop.io/drain",
    released="rayop.io/shard-released",
    root="rayop.io/shard-root",
    lease="rayop.io/shard-lease",
    handover="rayop.io/shard-handover",
    assigned="rayop.io/shard-assigned",
    lease_prefix="rayop-shard-",
)
"""rayop's sharding labels, annotation and Lease names."""

SHARDER_CONTROLLER = "rayop-sharder"
"""The reporting controller of the sharder's events (ShardMoved, ShardLabelRestored)."""

SHARDER_LEASE_SUFFIX = "-sharder"
"""Appended to ``--leader-election-id`` for the Lease of the replica that runs the sharder."""

RESOURCE_OF_KIND: Mapping[Kind, Resource] = {
    "RayCluster": RAY_CLUSTERS,
    "RayJob": RAY_JOBS,
    "RayService": RAY_SERVICES,
    "RayCronJob": RAY_CRON_JOBS,
}

OWNERS_OF: Mapping[Kind, tuple[Kind, ...]] = {
    "RayCluster": ("RayJob", "RayService"),
    "RayJob": ("RayCronJob",),
    "RayService": (),
    "RayCronJob": (),
}
"""Which ray.io kinds may own an object of each kind (and so be its root instead)."""

CHILD_RESOURCES: tuple[Resource, ...] = (
    RAY_CLUSTERS, RAY_JOBS, PODS, SERVICES, JOBS, SECRETS, CONFIGMAPS, SERVICE_ACCOUNTS, ROLES,
    ROLE_BINDINGS, PERSISTENT_VOLUME_CLAIMS, INGRESSES, NETWORK_POLICIES, ROUTES, GATEWAYS,
    HTTP_ROUTES, CERTIFICATES, VOLCANO_PODGROUPS, PLUGIN_PODGROUPS, WAS_PODGROUPS,
)  # fmt: skip
"""Where the operator creates objects for a root (an unserved one is skipped)."""

UNSHARDED: frozenset[str] = frozenset(str(r) for r in (ENDPOINT_SLICES, ISSUERS, LEASES))
"""Resources every replica caches whole: the operator reads them but does not create them per
root (EndpointSlices come from Kubernetes; an Issuer serves a whole namespace)."""


ACQUIRE_PERIOD = 0.5
"""Seconds between a waiting replica's reads of a Lease another holds (no jitter): the sharder's
role moves within about the Lease duration plus one second of its holder's death, not the
Lease duration plus up to two jittered retry periods (about 24 s with the defaults); with a
handful of replicas the extra reads (two a second each) cost nothing. The membership Leases are
read as often: a replica counts as gone one Lease duration after the renewal seen last, so a
renewal seen up to a retry period late (2 s) would delay its roots' takeover as much."""


def lease_timing(settings: ShardingSettings) -> LeaderElectionSettings:
    """Returns the timings of the membership Leases and of the sharder's leader Lease (whose
    holder is named after the replica: ``<replica id>_<uuid>``)."""
    return replace(
        DEFAULT_LEADER_ELECTION,
        identity=f"{settings.replica_id}_{uuid.uuid4()}",
        lease_duration=settings.lease_duration,
        renew_deadline=settings.renew_deadline,
        retry_period=settings.retry_period,
        acquire_period=min(ACQUIRE_PERIOD, settings.retry_period),
    )


def sharded_cache(config: CacheConfig, replica_id: str) -> CacheConfig:
    """Returns ``config`` narrowed to what ``replica_id`` owns. The sharding labels are
    selected on by the API server only (the informers' selectors, the sharder's lists), so the
    caches keep no copy of them beside each object: the shard label has one value in a
    replica's caches and the root label one per root (kept, they would give a RayCluster with
    no labels of its own a label map, and every object of a root a longer one, in a replica
    with sharding on and not in one without)."""
    return replace(
        config,
        shard_selector=KEYS.owned_by(replica_id),
        unsharded=UNSHARDED,
        server_only_labels=frozenset({KEYS.shard, KEYS.root, KEYS.drain, KEYS.released}),
    )


def unreconciled(root: Obj) -> bool:
    """Tells a ray.io root no pass has run on: it has no status yet (each controller writes one
    at the end of its first pass). With sharding on no pass runs before a root is assigned, so a
    never-assigned root without status has no objects; the one case missed is a root whose
    objects an operator without sharding created in a first pass it never finished (stopped
    before the status write): those are not adopted."""
    return not root.get("status")


def owner_of(obj: Obj, kinds: Collection[Kind]) -> tuple[Kind, str] | None:
    """Returns the controlling ray.io owner of ``obj`` among ``kinds`` (kind, name), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        kind = ref.get("kind")
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        if ref.get("controller") and group == "ray.io" and kind in kinds:
            return kind, str(ref.get("name", ""))
    return None


class RootFinder:
    """Finds roots from the replica's caches, for the selected kinds only."""

    def __init__(self, informers: InformerFactory, kinds: Collection[Kind]) -> None:
        self._kinds = tuple(kinds)
        self._informers = informers

    def is_root(self, kind: Kind) -> Callable[[Obj], bool]:
        """Returns the predicate of the roots among objects of ``kind``."""
        owners = [k for k in OWNERS_OF[kind] if k in self._kinds]
        return lambda obj: owner_of(obj, owners) is None

    def resource(self, kind: Kind) -> Resource:
        """Returns the resource of ``kind``'s objects."""
        return RESOURCE_OF_KIND[kind]

    def resolver(self, kind: Kind) -> Resolver:
        """Returns the resolver of requests whose object is of ``kind``."""

        def resolve(request: Request) -> Root | None:
            obj = self._get(kind, request.namespace, request.name)
            if obj is None:
                return None
            current_kind, name = kind, request.name
            while True:
                owners = [k for k in OWNERS_OF[current_kind] if k in self._kinds]
                owner = owner_of(obj, owners)
                if owner is None:
                    resource = RESOURCE_OF_KIND[current_kind]
                    return Root(resource, request.namespace, name, obj)
                current_kind, name = owner
                found = self._get(current_kind, request.namespace, name)
                if found is None:
                    resource = RESOURCE_OF_KIND[current_kind]
                    return Root(resource, request.namespace, name, None)
                obj = found

        return resolve

    def _get(self, kind: Kind, namespace: str, name: str) -> Obj | None:
        return self._informers.informer(RESOURCE_OF_KIND[kind]).get(namespace, name)


@dataclass(frozen=True, slots=True)
class ShardingParts:
    """What :func:`install_sharding` built."""

    gate: ShardGate
    finder: RootFinder
    member: LeaderElector
    sharder: Sharder


def install_sharding(
    *,
    client: KubeClient,
    informers: InformerFactory,
    kinds: Collection[Kind],
    settings: ShardingSettings,
    namespace: str,
    gate: ShardGate,
    watch_namespaces: Collection[str] = (),
    events: EventSink | None = None,
    add_runnable: Callable[..., None],
    add_start_gate: Callable[..., None],
    lease_timing: LeaderElectionSettings = DEFAULT_LEADER_ELECTION,
    lease_client: KubeClient | None = None,
    sharder_client: KubeClient | None = None,
    clock: Clock = MONOTONIC,
) -> ShardingParts:
    """Wires membership, the sharder, the root informers' drain handler and the create labels;
    the sharder assigns the roots of ``watch_namespaces`` (empty: of every namespace) and
    records its events (moves, hand-edited labels put back) in ``events``.

    ``lease_client`` reads and renews the membership Leases, ``sharder_client`` sends the
    sharder's lists and relabels (None: ``client``); each with a token bucket of its own, a
    renewal never waits behind a burst of reconcile writes past the renew deadline, and a dead
    replica's roots are relabelled without queueing behind the survivors' pod creates."""
    finder = RootFinder(informers, kinds)
    for kind in kinds:
        informers.informer(RESOURCE_OF_KIND[kind]).add_event_handler(
            gate.root_handler(RESOURCE_OF_KIND[kind])
        )
    client.create_labels = gate.stamp
    joined = asyncio.Event()
    leases = lease_client or client
    member = member_elector(
        leases,
        settings.replica_id,
        KEYS,
        replace(lease_timing, namespace=namespace),  # beside the leader Lease, not in "default"
        on_joined=joined.set,
        clock=clock,
    )
    add_runnable("shard membership", lambda: hold_membership(member), need_leader_election=False)
    add_start_gate(joined.wait)
    membership = Membership(leases, namespace, KEYS, clock=clock)
    add_runnable(
        "shard membership observer",
        lambda: observe_membership(
            membership, min(ACQUIRE_PERIOD, settings.retry_period), clock=clock
        ),
        need_leader_election=False,
    )
    sharder = Sharder(
        sharder_client or client,
        membership,
        KEYS,
        [RootKind(RESOURCE_OF_KIND[k], finder.is_root(k), unreconciled) for k in kinds],
        CHILD_RESOURCES,
        namespaces=sorted(watch_namespaces),
        metrics=gate.metrics,
        events=events,
        interval=settings.sharder_interval,
        clock=clock,
    )
    gate.set_repair(sharder.repair)  # in every replica: hand edits are seen by the one named
    add_runnable("sharder", sharder.run, need_leader_election=True)
    return ShardingParts(gate, finder, member, sharder)
