"""The ``rayjob`` controller, described once (:data:`RAYJOB`).

KubeRay's RayJob controller. It watches RayJobs with no predicate (so its own status writes
trigger the next pass, which moves the state machine along at once) and the RayClusters,
Services and batch Jobs it owns (their controlling RayJob is enqueued). Its own writes of a
RayJob are tracked (:mod:`rayop.controllers.kit.own_writes`): a pass never works from a cached
RayJob older than them, and the RayJob is enqueued again when the cache shows them. Time is the
manager's clock. With a poll interval (``--rayjob-dashboard-poll-interval``, off by default) a
:class:`~rayop.controllers.dashboard.job_poller.JobInfoPoller` follows every Running job in the
background and enqueues its RayJob when the job's answer changes, and a
:class:`~rayop.controllers.dashboard.job_submissions.JobSubmissions` POSTs HTTPMode jobs in the
background (no pass waits for a dashboard); the manager closes both.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import cast

from rayop.controllers.assembly.blueprint import ControllerBlueprint, Wired, Wiring
from rayop.controllers.dashboard.job_poller import JobInfoPoller, PollTarget
from rayop.controllers.dashboard.job_submissions import JobSubmissions
from rayop.controllers.kit.own_writes import track_own_writes
from rayop.controllers.kit.watches import ray_watches
from rayop.controllers.rayjob.context import RayJobDeps, dashboard_factory
from rayop.controllers.rayjob.reconciler import RayJobReconciler
from rayop.kube.resources import JOBS, PODS, RAY_CLUSTERS, RAY_JOBS, SECRETS, SERVICES
from rayop.runtime.controller import Controller
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.reconcile import Request

CONTROLLER_NAME = "rayjob"
REPORTING_CONTROLLER = "rayjob-controller"
OWNER_KIND = "RayJob"


def _build(wiring: Wiring) -> Wired:
    informers = wiring.informers
    rayjobs = informers.informer(RAY_JOBS)
    clusters = informers.informer(RAY_CLUSTERS)
    services = informers.informer(SERVICES)
    jobs = informers.informer(JOBS)
    settings = wiring.settings
    own_writes = track_own_writes(rayjobs, clock=wiring.clock)
    poller = submissions = None
    if settings.rayjob_dashboard_poll_interval > 0:
        still_polled = _still_polled(rayjobs, clusters)
        poller = JobInfoPoller(
            interval=settings.rayjob_dashboard_poll_interval,
            clock=wiring.clock,
            still_wanted=still_polled,
            name="rayjob dashboard poller",
        )
        wiring.add_closer("rayjob dashboard poller", poller.close)
        submissions = JobSubmissions(still_wanted=still_polled, name="rayjob job submissions")
        wiring.add_closer("rayjob job submissions", submissions.close)
    deps = RayJobDeps(
        client=wiring.client,
        rayjobs=rayjobs,
        clusters=clusters,
        jobs=jobs,
        services=services,
        pods=informers.informer(PODS),
        secrets=informers.informer(SECRETS),
        own_writes=own_writes,
        recorder=wiring.recorder(REPORTING_CONTROLLER),
        options=wiring.options,
        dashboards=dashboard_factory(
            wiring.client,
            use_kubernetes_proxy=settings.use_kubernetes_proxy,
            resolver=settings.dashboard_resolver,
        ),
        clock=wiring.clock,
        poller=poller,
        submissions=submissions,
    )

    def let_poller_enqueue(controller: Controller) -> None:
        if poller is not None:
            poller.on_change = lambda key: controller.enqueue(cast(Request, key))
        if submissions is not None:
            submissions.on_done = lambda key: controller.enqueue(cast(Request, key))

    return Wired(
        reconcile=RayJobReconciler(deps).reconcile,
        sources=ray_watches(rayjobs, owner_kind=OWNER_KIND, owned=[clusters, services, jobs]),
        own_writes=own_writes,
        on_controller=let_poller_enqueue,
    )


def _still_polled(
    rayjobs: CacheReader, clusters: CacheReader
) -> Callable[[Hashable, PollTarget], bool]:
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


RAYJOB = ControllerBlueprint(name=CONTROLLER_NAME, kind="RayJob", build=_build)
