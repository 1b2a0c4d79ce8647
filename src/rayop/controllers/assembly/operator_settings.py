"""What ``rayop run`` configures: :class:`OperatorSettings`, one field per KubeRay flag.

The command line (``rayop run``, ``rayop up``), the benchmark and the test kit all build one and
hand it to :func:`~rayop.controllers.assembly.build.build_operator`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.dashboard.transport import ServiceResolver
from rayop.controllers.kit import settings
from rayop.controllers.webhooks.serving import WebhookSettings


@dataclass(frozen=True, slots=True)
class ShardingSettings:
    """``--sharding`` and what goes with it."""

    replica_id: str
    """This replica's id (``--replica-id``; default: the host name): its Lease and label value."""
    pass_record: str | None = None
    """Where every pass is appended as a JSON line (``--pass-record``); None: nowhere."""
    sharder_interval: float = 1.0
    """Seconds between two steps of the sharder (leader only)."""
    lease_duration: float = 15.0
    """Seconds after its last renewal seen that a replica counts as gone (also the sharder's
    leader Lease); leader election's default."""
    renew_deadline: float = 10.0
    """Seconds a replica keeps retrying to renew its Lease before it stops reconciling."""
    retry_period: float = 2.0
    """Seconds between two renewals."""
    sharder_qps: float = 500.0
    """The sharder's own token bucket (``--sharder-qps``): its lists and relabels, which bound
    how soon a dead replica's roots are owned again (a patch per object of each root)."""
    sharder_burst: int = 1000
    """The burst of that bucket (``--sharder-burst``)."""


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    """What ``rayop run`` configures; field names and defaults follow KubeRay's flags."""

    reconcile_concurrency: int = 1
    """Workers per controller (KubeRay's --reconcile-concurrency); every controller gets this many."""
    adaptive_concurrency: bool = False
    """``--reconcile-concurrency=auto``: each controller moves its workers between 1 and
    ``max_reconcile_concurrency`` (:mod:`rayop.runtime.concurrency.law`)."""
    max_reconcile_concurrency: int = 16
    """The ceiling of adaptive concurrency (``--max-reconcile-concurrency``)."""
    use_priority_queue: bool = True
    """controller-runtime's priority queue (the default since v0.23), else the classic queue."""
    metrics_addr: str = ":8080"
    """Where /metrics is served; "0" disables it."""
    health_probe_bind_address: str = ":8082"
    """Where /healthz and /readyz are served; "0" disables it."""
    enable_leader_election: bool = True
    """Campaign for the Lease before reconciling."""
    leader_election_id: str = "ray-operator-leader"
    """The Lease name."""
    leader_election_namespace: str | None = None
    """The Lease namespace; None means the service account's (or "default" outside a cluster)."""
    watch_namespaces: tuple[str, ...] = ()
    """Namespaces to watch; empty means all."""
    qps: float = 100.0
    """Client-side token bucket rate; negative disables throttling."""
    burst: int = 200
    """Client-side token bucket capacity."""
    use_kubernetes_proxy: bool = False
    """Reach Ray dashboards through the API server's services proxy, else directly (KubeRay's
    default: ``http://<head svc>.<ns>.svc.<cluster domain>:<port>``, no API server request)."""
    dashboard_resolver: ServiceResolver | None = None
    """Maps direct dashboard URLs where cluster DNS cannot (``rayop up``'s embedded plane)."""
    rayjob_dashboard_poll_interval: float = settings.RAYJOB_DASHBOARD_POLL_INTERVAL
    """Seconds between two background GETs of a Running RayJob's job info; 0 (the default):
    every Running pass GETs it and is requeued in 3 s (KubeRay v1.7.0)."""
    options: OperatorOptions = field(default_factory=OperatorOptions.from_env)
    """KubeRay's environment options and feature gates."""
    pod_create_concurrency: int = settings.POD_CALL_CONCURRENCY
    """Pod create/delete calls of one worker group in flight at once (1: one by one, as KubeRay)."""
    enable_metrics: bool = False
    """KubeRay's --enable-metrics: export the nine kuberay_* metrics."""
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    """Where the validating webhooks are served when ``ENABLE_WEBHOOKS=true``."""
    decision_events: bool = False
    """``--decision-events``: each pass that ended waiting records a Normal ``Waiting`` Event
    with its account's one line (:mod:`rayop.controllers.assembly.decision_events`); off, the
    Events are KubeRay's."""
    sharding: ShardingSettings | None = None
    """``--sharding``: this replica reconciles only the roots assigned to it (None: all)."""
