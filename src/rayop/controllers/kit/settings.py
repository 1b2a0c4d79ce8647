"""When the controllers requeue, and how many pod calls one pass may have in flight.

Every fixed interval a controller waits before it looks at an object again lives here, so one
file answers "why was this reconciled again after N seconds". Intervals that users set (the
periodic RayCluster requeue, RayJob timeouts) are operator options
(:class:`~rayop.controllers.config.options.OperatorOptions`), not settings. Values are KubeRay
v1.7.0's (the constants at the top of ``raycluster_controller.go``, ``rayjob_controller.go`` and
``rayservice_controller.go`` in ``ray-operator/controllers/ray/``) unless a docstring says
otherwise; all are seconds.
"""

from __future__ import annotations

from typing import Final

RAYCLUSTER_STATUS_CHANGED_REQUEUE: Final = 2.0
"""``DefaultRequeueDuration``: a RayCluster pass whose status changed looks again this soon."""

RAYCLUSTER_REDIS_CLEANUP_WAIT: Final = 10.0
"""While a deleted GCS-FT RayCluster's head pod still runs, the Redis cleanup waits this long."""

RAYJOB_REQUEUE: Final = 3.0
"""``RayJobDefaultRequeueDuration``: every non-terminal RayJob pass ends with this requeue."""

RAYJOB_DASHBOARD_POLL_INTERVAL: Final = 0.0
"""The default of ``--rayjob-dashboard-poll-interval``: no background poller, so a Running pass
GETs the job's info and is requeued in :data:`RAYJOB_REQUEUE`, as KubeRay v1.7.0. The poller is
opt-in (3 s is the natural value): at 1,000 Running RayJobs on the embedded plane its passes
stalled (docs/performance.md)."""

RAYJOB_DELETION_MARGIN: Final = 2.0
"""Added to a RayJob deletion deadline, so the pass that acts on it runs after it is due."""

RAYJOB_POLLED_RESYNC: Final = 60.0
"""With the background poller on, a Running RayJob whose answer did not change is still looked
at this often (rayop's; KubeRay has no poller)."""

RAYJOB_NEXT_CHECK_MARGIN: Final = 0.01
"""A RayJob pass that waits for a deadline (a timeout, a TTL) looks again this long after it,
so that the pass that acts on it runs once it is due."""

RAYCRONJOB_REQUEUE: Final = 3.0
"""``RayCronJobDefaultRequeueDuration``: a RayCronJob pass whose cache is behind our own status
write looks again this soon."""

MTLS_NOT_READY_REQUEUE: Final = 30.0
"""The ``raycluster-mtls`` controller looks again this soon while certificates are not issued."""

MTLS_PERIODIC_REQUEUE: Final = 60.0
"""The ``raycluster-mtls`` controller looks again this often once the PKI is ready (how new pod
IPs reach the certificates)."""

RAYSERVICE_REQUEUE: Final = 2.0
"""``ServiceDefaultRequeueDuration``: every RayService pass requeues after at most this."""

RAYSERVICE_MIN_REQUEUE: Final = 0.05
"""A RayService pass never requeues sooner (a deletion due now, a suspend just written); rayop's."""

MIN_REQUEUE: Final = 0.001
"""The shortest delay a controller asks for when a computed deadline is already past; rayop's."""

POD_CALL_CONCURRENCY: Final = 16
"""At most this many pod create/delete calls of one worker group are in flight at once (rayop's:
KubeRay makes them one at a time)."""
