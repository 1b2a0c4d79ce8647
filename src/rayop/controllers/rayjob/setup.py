"""Wires the RayJob controller into a manager (KubeRay's ``SetupWithManager``, §1.3).

The controller is named ``rayjob``. It watches RayJobs with no predicate (so its own status
writes trigger the next pass, which moves the state machine along at once) and the RayClusters,
Services and batch Jobs it owns (their controlling RayJob is enqueued). Its own writes of a
RayJob are tracked (:mod:`rayop.controllers.common.own_writes`): a pass never works from a cached
RayJob older than them, and the RayJob is enqueued again when the cache shows them. Time is the
manager's clock. With a poll interval (``--rayjob-dashboard-poll-interval``, off by default) a
:class:`~rayop.controllers.dashboard.job_poller.JobInfoPoller` follows every Running job in the
background and enqueues its RayJob when the job's answer changes; the manager closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import cast

from rayop.controllers.common.options import OperatorOptions
from rayop.controllers.common.own_writes import enqueue_when_caught_up, track_own_writes
from rayop.controllers.common.registration import ray_watches, register_controller
from rayop.controllers.dashboard.job_poller import JobInfoPoller, PollTarget
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
from rayop.runtime.reconcile import Request

CONTROLLER_NAME = "rayjob"
REPORTING_CONTROLLER = "rayjob-controller"
OWNER_KIND = "RayJob"
DEFAULT_POLL_INTERVAL = 0.0
"""No background poller: a Running pass GETs the job's info and is requeued in 3 s, as KubeRay
v1.7.0. The poller is opt-in (3 s, KubeRay's ``RayJobDefaultRequeueDuration``, is the natural
value): at 1,000 Running RayJobs on the embedded plane its passes stalled (docs/performance.md)."""


def setup_rayjob_controller(
    manager: Manager,
    *,
    options: OperatorOptions,
    max_concurrent_reconciles: int,
    use_priority_queue: bool = True,
    use_kubernetes_proxy: bool = False,
    dashboard_resolver: ServiceResolver | None = None,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
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
        poll_interval: Seconds between two background GETs of a Running job's info; 0: no
            poller, every Running pass GETs it and is requeued in 3 s (KubeRay v1.7.0's way).
    """
    informers = manager.informers
    rayjobs = informers.informer(RAY_JOBS)
    clusters = informers.informer(RAY_CLUSTERS)
    services = informers.informer(SERVICES)
    jobs = informers.informer(JOBS)
    client = cast(KubeClient, manager.client)
    own_writes = track_own_writes(rayjobs, clock=manager.clock)
    poller = None
    if poll_interval > 0:
        poller = JobInfoPoller(
            interval=poll_interval,
            clock=manager.clock,
            still_wanted=_still_polled(cast(Cache, rayjobs), cast(Cache, clusters)),
            name="rayjob dashboard poller",
        )
        manager.add_closer("rayjob dashboard poller", poller.close)
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
        poller=poller,
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
    if poller is not None:
        poller.on_change = lambda key: controller.enqueue(cast(Request, key))
    return controller


def _still_polled(rayjobs: Cache, clusters: Cache) -> Callable[[Hashable, PollTarget], bool]:
    """Returns the poller's check, from the caches: the RayJob exists, is not being deleted, is
    Running the same job, and its cluster (the same one) exists and is not being deleted."""

    def still_polled(key: Hashable, target: PollTarget) -> bool:
        request = cast(Request, key)
        rayjob = rayjobs.get(request.namespace or None, request.name)
        if rayjob is None or (rayjob.get("metadata") or {}).get("deletionTimestamp"):
            return False
        status = rayjob.get("status") or {}
        if status.get("jobDeploymentStatus") != "Running" or status.get("jobId") != target.job_id:
            return False
        cluster = clusters.get(request.namespace, str(status.get("rayClusterName") or ""))
        meta = (cluster or {}).get("metadata") or {}
        return (
            cluster is not None
            and str(meta.get("uid") or "") == target.cluster_uid
            and not meta.get("deletionTimestamp")
        )

    return still_polled
