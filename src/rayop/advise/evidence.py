"""What one window of scrapes says about each controller and about the API client.

A window is a series of scrapes of one operator, oldest first. Counters and histograms are read
as the difference between the last scrape and the first (and between the middle one and each
end, for trends); gauges (busy workers, queue depth) are read at every scrape. A counter that
went down between two scrapes means the process restarted: the window cannot be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from rayop.advise.exposition import Histogram, Snapshot

COUNTERS = (
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "workqueue_adds_total",
    "controller_runtime_reconcile_time_seconds_count",
    "rest_client_request_duration_seconds_count",
)
"""The counters whose fall between two scrapes shows a restart."""


@dataclass(frozen=True, slots=True)
class Scrape:
    """One reading of an operator's metrics."""

    t: float
    """Seconds since the window began."""
    snapshot: Snapshot


def _half(window: Sequence[Scrape]) -> int:
    return len(window) // 2


def _quantiles(h: Histogram) -> tuple[float | None, float | None]:
    return h.quantile(0.5), h.quantile(0.99)


def _slope_per_minute(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of ``(t, value)`` in value per minute (0 for fewer than 2)."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread <= 0:
        return 0.0
    return 60.0 * sum((t - mean_t) * (v - mean_v) for t, v in points) / spread


def counter_reset(window: Sequence[Scrape]) -> str | None:
    """Names a counter series that fell between two scrapes (None: none fell)."""
    for earlier, later in pairwise(window):
        for (name, labels), value in earlier.snapshot.samples.items():
            if (
                name.endswith(COUNTERS)
                and later.snapshot.samples.get((name, labels), value) < value
            ):
                return name
    return None


@dataclass(frozen=True, slots=True)
class ControllerEvidence:
    """One controller over one window."""

    controller: str
    seconds: float
    scrapes: int
    workers: int
    """controller_runtime_max_concurrent_reconciles at the last scrape."""
    busy: float
    """Share of the scrapes in which every worker was busy."""
    mean_active: float
    depth_first: float
    depth_last: float
    depth_max: float
    depth_slope: float
    """Least-squares trend of workqueue_depth, items per minute."""
    adds: float
    passes: float
    errors: float
    wait_p50: float | None
    wait_p99: float | None
    pass_p50: float | None
    pass_p99: float | None
    pass_mean: float | None
    pass_p50_first_half: float | None
    pass_p50_second_half: float | None

    @property
    def error_share(self) -> float:
        """Reconcile errors per reconcile (0 when none ran)."""
        return self.errors / self.passes if self.passes else 0.0

    @property
    def arrivals_per_second(self) -> float:
        """New work items per second (workqueue_adds_total counts each key once while queued)."""
        return self.adds / self.seconds if self.seconds > 0 else 0.0

    @property
    def queue_growing(self) -> bool:
        """Whether the queue grew over the window (by more than one item a minute)."""
        return self.depth_slope > 1.0 and self.depth_last > self.depth_first


def controller_evidence(controller: str, window: Sequence[Scrape]) -> ControllerEvidence:
    """Reads ``controller``'s evidence out of ``window`` (at least two scrapes)."""
    first, mid, last = window[0].snapshot, window[_half(window)].snapshot, window[-1].snapshot
    c = {"controller": controller}
    q = {"name": controller}
    active = [s.snapshot.total("controller_runtime_active_workers", **c) for s in window]
    limits = [s.snapshot.total("controller_runtime_max_concurrent_reconciles", **c) for s in window]
    depth = [(s.t, s.snapshot.total("workqueue_depth", **q)) for s in window]
    busy = sum(1 for a, m in zip(active, limits, strict=True) if m > 0 and a >= m)
    wait = last.histogram("workqueue_queue_duration_seconds", **q) - first.histogram(
        "workqueue_queue_duration_seconds", **q
    )
    passes = last.histogram("controller_runtime_reconcile_time_seconds", **c) - first.histogram(
        "controller_runtime_reconcile_time_seconds", **c
    )
    early = mid.histogram("controller_runtime_reconcile_time_seconds", **c) - first.histogram(
        "controller_runtime_reconcile_time_seconds", **c
    )
    late = last.histogram("controller_runtime_reconcile_time_seconds", **c) - mid.histogram(
        "controller_runtime_reconcile_time_seconds", **c
    )
    return ControllerEvidence(
        controller=controller,
        seconds=window[-1].t - window[0].t,
        scrapes=len(window),
        workers=int(limits[-1]),
        busy=busy / len(window),
        mean_active=sum(active) / len(active),
        depth_first=depth[0][1],
        depth_last=depth[-1][1],
        depth_max=max(v for _, v in depth),
        depth_slope=_slope_per_minute(depth),
        adds=last.total("workqueue_adds_total", **q) - first.total("workqueue_adds_total", **q),
        passes=last.total("controller_runtime_reconcile_total", **c)
        - first.total("controller_runtime_reconcile_total", **c),
        errors=last.total("controller_runtime_reconcile_errors_total", **c)
        - first.total("controller_runtime_reconcile_errors_total", **c),
        wait_p50=_quantiles(wait)[0],
        wait_p99=_quantiles(wait)[1],
        pass_p50=_quantiles(passes)[0],
        pass_p99=_quantiles(passes)[1],
        pass_mean=passes.mean,
        pass_p50_first_half=early.quantile(0.5),
        pass_p50_second_half=late.quantile(0.5),
    )


@dataclass(frozen=True, slots=True)
class VerbLatency:
    """API requests of one verb over the window."""

    verb: str
    requests: float
    p50: float | None
    p99: float | None
    throttle_mean: float | None
    """Mean token-bucket wait per request of this verb (None: no client limiter series)."""


@dataclass(frozen=True, slots=True)
class ClientEvidence:
    """The operator's API client over one window (all controllers share it)."""

    requests: float
    latency_mean: float | None
    """Mean request latency, the token-bucket wait taken out (None: no request)."""
    latency_first_half: float | None
    latency_second_half: float | None
    p99: float | None
    """Request latency p99 over the window, throttling included (the series holds both)."""
    latency_base: float | None
    """The lowest mean latency (throttling excluded) of any scrape interval with at least
    ``BASE_MIN_REQUESTS`` requests: the API's unloaded latency, as the adaptive law keeps it."""
    throttle_mean: float | None
    throttle_first_half: float | None
    throttle_second_half: float | None
    verbs: tuple[VerbLatency, ...]
    cores_used: float | None = None
    """process_cpu_seconds_total per second over the window (None: not exported)."""


def server_latency(before: Snapshot, after: Snapshot) -> float | None:
    """Returns the mean request latency between two scrapes, the token-bucket wait excluded.

    ``rest_client_request_duration_seconds`` minus ``rest_client_rate_limiter_duration_seconds``
    over the requests made in between (None when there were none).
    """
    api = after.histogram("rest_client_request_duration_seconds") - before.histogram(
        "rest_client_request_duration_seconds"
    )
    if api.count <= 0:
        return None
    throttle = after.histogram("rest_client_rate_limiter_duration_seconds") - before.histogram(
        "rest_client_rate_limiter_duration_seconds"
    )
    return max(0.0, api.sum - throttle.sum) / api.count


def throttle_wait(before: Snapshot, after: Snapshot, **match: str) -> float | None:
    """Returns the mean token-bucket wait per request between two scrapes.

    None when there was no request, or the client exports no rate-limiter series.
    """
    requests = after.histogram("rest_client_request_duration_seconds", **match) - before.histogram(
        "rest_client_request_duration_seconds", **match
    )
    waits = after.histogram("rest_client_rate_limiter_duration_seconds", **match) - (
        before.histogram("rest_client_rate_limiter_duration_seconds", **match)
    )
    if requests.count <= 0 or not waits.buckets:
        return None
    return waits.sum / requests.count


BASE_MIN_REQUESTS = 20
"""Requests a scrape interval needs before its mean latency may stand as the base."""


def latency_base(window: Sequence[Scrape]) -> float | None:
    """Returns the lowest interval mean latency of ``window`` (None: no interval had enough)."""
    lows = []
    for earlier, later in pairwise(window):
        requests = later.snapshot.histogram("rest_client_request_duration_seconds").count - (
            earlier.snapshot.histogram("rest_client_request_duration_seconds").count
        )
        if requests >= BASE_MIN_REQUESTS:
            mean = server_latency(earlier.snapshot, later.snapshot)
            if mean is not None:
                lows.append(mean)
    return min(lows) if lows else None


def client_evidence(window: Sequence[Scrape]) -> ClientEvidence:
    """Reads the API client's evidence out of ``window`` (at least two scrapes)."""
    first, mid, last = window[0].snapshot, window[_half(window)].snapshot, window[-1].snapshot
    total = last.histogram("rest_client_request_duration_seconds") - first.histogram(
        "rest_client_request_duration_seconds"
    )
    verbs = sorted(set(last.by_label("rest_client_request_duration_seconds_count", "verb")) - {""})
    per_verb = []
    for verb in verbs:
        h = last.histogram("rest_client_request_duration_seconds", verb=verb) - first.histogram(
            "rest_client_request_duration_seconds", verb=verb
        )
        if h.count > 0:
            per_verb.append(
                VerbLatency(
                    verb=verb,
                    requests=h.count,
                    p50=h.quantile(0.5),
                    p99=h.quantile(0.99),
                    throttle_mean=throttle_wait(first, last, verb=verb),
                )
            )
    return ClientEvidence(
        requests=total.count,
        latency_mean=server_latency(first, last),
        latency_first_half=server_latency(first, mid),
        latency_second_half=server_latency(mid, last),
        p99=total.quantile(0.99),
        latency_base=latency_base(window),
        throttle_mean=throttle_wait(first, last),
        throttle_first_half=throttle_wait(first, mid),
        throttle_second_half=throttle_wait(mid, last),
        verbs=tuple(per_verb),
        cores_used=_cores_used(window),
    )


def _cores_used(window: Sequence[Scrape]) -> float | None:
    first, last = window[0].snapshot, window[-1].snapshot
    seconds = window[-1].t - window[0].t
    name = "process_cpu_seconds_total"
    if seconds <= 0 or not any(n == name for n, _ in last.samples):
        return None
    return (last.total(name) - first.total(name)) / seconds
