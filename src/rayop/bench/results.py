"""The figures one bench run produces for one ``--concurrency`` value (and their JSON form)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class LatencyStats:
    """Per-cluster ready latency in seconds (None when no cluster became ready)."""

    count: int = 0
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


@dataclass(frozen=True, kw_only=True)
class ConcurrencyResult:
    """What was measured at one ``--reconcile-concurrency`` value.

    Times are seconds of the measured phase; "per minute" rates divide by its length.
    """

    concurrency: int
    """The fixed worker count, or the ceiling of an adaptive run."""
    adaptive: bool = False
    """Run with ``--reconcile-concurrency=auto`` (between 1 and ``concurrency`` workers)."""
    repeat: int = 0
    """Which run of this setting it was (0 for the first; ``--repeat`` runs each value again)."""
    scenario: str = "create"
    clusters: int = 0
    workers: int = 0
    timed_out: bool = False
    seconds_until_all_ready: float = 0.0
    ready_latency: LatencyStats = field(default_factory=LatencyStats)
    ready_latency_by_group: dict[str, LatencyStats] = field(default_factory=dict)
    queue_wait_p50: float | None = None
    """workqueue_queue_duration_seconds quantiles from its buckets (1e-8 ... 1e3, tenfold apart),
    capped at how long the operator had run."""
    queue_wait_p99: float | None = None
    queue_wait_mean: float | None = None
    reconcile_time_p50: float | None = None
    reconcile_time_p99: float | None = None
    reconciles: int = 0
    longest_reconcile_seconds: float = 0.0
    """The longest single reconcile seen in the 0.5 s samples (a worker held that long)."""
    busy_fraction: float = 0.0
    """Fraction of 0.5 s samples with active_workers == max_concurrent_reconciles."""
    mean_active_workers: float = 0.0
    queue_depth_max: float = 0.0
    queue_depth_mean: float = 0.0
    reconcile_errors: int = 0
    reconcile_errors_per_minute: float = 0.0
    conflicts: int = 0
    """HTTP 409 answers to the operator's requests."""
    conflicts_per_minute: float = 0.0
    user_conflicts: int = 0
    api_latency_mean: float | None = None
    """rest_client_request_duration_seconds mean (throttling wait included, as client-go does)."""
    api_server_latency_mean: float | None = None
    """The same minus the token-bucket wait: the time the API server and network took."""
    api_latency_p50: float | None = None
    api_latency_p99: float | None = None
    operator_requests: int = 0
    operator_requests_by_method: dict[str, int] = field(default_factory=dict)
    """The operator's own requests (rest_client_requests_total) by HTTP method."""
    throttle_wait_seconds: float = 0.0
    """Sum of rest_client_rate_limiter_duration_seconds."""
    throttle_wait_mean: float | None = None
    throttle_wait_p99: float | None = None
    api_requests_by_verb: dict[str, int] = field(default_factory=dict)
    """What the API server served during the measured phase (all clients)."""
    pod_creates: int = 0
    expected_pod_creates: int = 0
    duplicate_pod_creates: int = 0
    event_writes_by_verb: dict[str, int] = field(default_factory=dict)
    """Requests the API server served on ``events`` during the measured phase, by verb."""
    events_recorded: int | None = None
    """Events the operator's controllers asked to record (rayop_events_recorded_total); None
    for an operator that does not export it (KubeRay)."""
    events_unsent_by_reason: dict[str, int] | None = None
    """Recorded events not written as their own request (rayop_events_unsent_total), by
    reason: aggregated into a series count, queue_full, rejected, retries_exhausted, shutdown."""
    operator_cpu_seconds: float | None = None
    operator_peak_rss_mb: float | None = None
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    """(t, active workers, max workers, queue depth) every 0.5 s."""
    api_latency_samples: list[tuple[float, float]] = field(default_factory=list)
    """(t, mean API latency excluding client throttling since the previous sample) every 0.5 s
    in which the operator made a request."""
    api_slowdown_at: float | None = None
    """Seconds into the measured phase at which the API server was slowed (api-slowdown
    scenario or ``--api-latency-step``); None when it was not."""
    workers_at_slowdown: float | None = None
    """The worker limit in the last sample before the slowdown."""
    workers_reduced_after: float | None = None
    """Seconds from the slowdown to the first sample with a lower worker limit (None: never)."""
    advice: dict[str, Any] | None = None
    """What ``rayop advise`` said from this run's own metrics (the measured phase, read every
    2 s): its verdict on the measured controller, as :meth:`rayop.advise.verdict.Verdict.to_json`
    gives it; None when the metrics could not be read as an operator's."""
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The setting as ``--reconcile-concurrency`` takes it: ``8``, or ``auto`` (at most 16)."""
        return f"auto<={self.concurrency}" if self.adaptive else str(self.concurrency)

    def to_json(self) -> dict[str, Any]:
        """Returns a JSON-ready dict (every field, latency stats as nested objects)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConcurrencyResult:
        """Rebuilds a result from :meth:`to_json` output."""
        values = dict(data)
        values["ready_latency"] = LatencyStats(**values.get("ready_latency") or {})
        values["ready_latency_by_group"] = {
            k: LatencyStats(**v) for k, v in (values.get("ready_latency_by_group") or {}).items()
        }
        values["samples"] = [tuple(s) for s in values.get("samples") or []]
        values["api_latency_samples"] = [tuple(s) for s in values.get("api_latency_samples") or []]
        return cls(**values)
