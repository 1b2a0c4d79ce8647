"""The signals behind every concurrency decision, and when each counts as present.

One set of thresholds and predicates for the three places that judge ``--reconcile-concurrency``:
``rayop bench`` (its symptoms, over measured runs), ``rayop advise`` (over a running operator's
metrics) and, through the same numbers, the adaptive law. The signals are the ones
controller-runtime exports: worker saturation (``controller_runtime_active_workers`` at
``controller_runtime_max_concurrent_reconciles``), queue wait
(``workqueue_queue_duration_seconds``), reconcile errors, API latency
(``rest_client_request_duration_seconds``) and client throttling
(``rest_client_rate_limiter_duration_seconds``).

The API latency level is judged against the Kubernetes API call latency SLO (p99 of
single-object mutating and read-only calls at most 1 s:
https://github.com/kubernetes/community/blob/master/sig-scalability/slos/api_call_latency.md).
"""

from __future__ import annotations

BUSY_SATURATED = 0.8
"""Workers count as saturated when all were busy in at least this fraction of the time ..."""
QUEUE_BACKLOG_SECONDS = 1.0
"""... and the queue wait p99 reached this (or the queue kept growing)."""
LATENCY_RISE_RATIO = 1.5
LATENCY_RISE_FLOOR = 0.02
"""API latency "rose" when its mean grew by 1.5x and 20 ms."""
THROTTLE_RISE_RATIO = 1.5
THROTTLE_RISE_FLOOR = 0.05
"""Throttling "rose" when the mean token-bucket wait per request grew by 1.5x and 50 ms."""
LATENCY_RATIO_QUEUED = 2.0
"""API latency at twice its base (the lowest seen) or more, and 20 ms above it: requests queue at
the API server, more workers would add to the queue (the adaptive law grows only below it)."""
THROTTLE_WAIT_LIMIT = 0.05
"""A mean token-bucket wait per request of 50 ms or more: the client's ``--qps``/``--burst``
limit the operator, whatever the workers do."""
THROTTLE_WAIT_FLOOR = 0.01
"""... and so does a wait of 10 ms or more that is at least the API server's own latency: the
requests spend more of their time in the client's token bucket than at the server."""
API_P99_SLO_SECONDS = 1.0
"""The Kubernetes API call latency SLO: p99 at most 1 s (throttling excluded)."""
ERRORS_RISE_RATIO = 2.0
ERRORS_RISE_FLOOR = 0.05
"""Reconcile errors "rise" when their share of reconciles doubles and grows by 5 points (a few
routine 409s on status writes, which controllers see in normal operation, do not veto a raise)."""
ERRORS_HIGH = 0.1
"""A reconcile error share of 10 % or more: find why before adding workers."""
PASS_TIME_RISE_RATIO = 1.5
PASS_TIME_RISE_FLOOR = 0.02
"""Reconcile time "rose" when its p50 grew by 1.5x and 20 ms."""
CPU_SATURATED = 0.9
"""A process using 90 % of the cores it can run on is CPU-bound: more workers share them."""
TARGET_UTILISATION = 0.8
"""The busy share a raise aims for: workers = arrivals per second x mean pass time / 0.8."""


def rose(before: float | None, after: float | None, ratio: float, floor: float) -> bool:
    """Tells whether ``after`` grew from ``before`` by ``ratio`` times and ``floor`` at least."""
    b, a = before or 0.0, after or 0.0
    return a - b >= floor and a >= b * ratio


def saturated(busy: float, wait_p99: float | None, *, queue_growing: bool = False) -> bool:
    """Tells whether the workers were all busy most of the time while work backed up."""
    return busy >= BUSY_SATURATED and ((wait_p99 or 0.0) >= QUEUE_BACKLOG_SECONDS or queue_growing)


def wait_matters(before: float | None, after: float | None) -> bool:
    """Tells whether a change of queue wait p99 from ``before`` to ``after`` can count as a gain or
    a loss: only when one side reached a backlog (``QUEUE_BACKLOG_SECONDS``). Below it no work
    backed up on either side, and the difference is scheduling noise, not the workers' doing (an
    idle operator's p99 moved 0.85 s -> 0.66 s between two runs of one load on a busy machine)."""
    return max(before or 0.0, after or 0.0) >= QUEUE_BACKLOG_SECONDS


def latency_rose(before: float | None, after: float | None) -> bool:
    """Tells whether API latency (throttling excluded) rose from ``before`` to ``after``."""
    return rose(before, after, LATENCY_RISE_RATIO, LATENCY_RISE_FLOOR)


def api_queueing(latency: float | None, base: float | None) -> bool:
    """Tells whether API latency stands so far above its base that requests queue there."""
    if latency is None or base is None:
        return False
    return latency >= base * LATENCY_RATIO_QUEUED and latency - base >= LATENCY_RISE_FLOOR


def throttled(wait: float | None, latency: float | None) -> bool:
    """Tells whether the client's token bucket limits the operator (mean wait per request
    ``wait``; ``latency`` is the mean request latency with the wait taken out)."""
    if wait is None:
        return False
    if wait >= THROTTLE_WAIT_LIMIT:
        return True
    return wait >= THROTTLE_WAIT_FLOOR and wait >= (latency or 0.0)


def throttle_rose(before: float | None, after: float | None) -> bool:
    """Tells whether the token-bucket wait per request rose from ``before`` to ``after``."""
    return rose(before, after, THROTTLE_RISE_RATIO, THROTTLE_RISE_FLOOR)


def errors_rose(before: float, after: float) -> bool:
    """Tells whether the reconcile error share rose from ``before`` to ``after``."""
    return after - before >= ERRORS_RISE_FLOOR and after >= before * ERRORS_RISE_RATIO


def pass_time_rose(before: float | None, after: float | None) -> bool:
    """Tells whether the reconcile time p50 rose from ``before`` to ``after``."""
    return rose(before, after, PASS_TIME_RISE_RATIO, PASS_TIME_RISE_FLOOR)


def cpu_bound(cores_used: float | None, cores: float | None) -> bool:
    """Tells whether a process using ``cores_used`` of the ``cores`` it can run on is CPU-bound
    (False when either is unknown)."""
    return cores_used is not None and cores is not None and cores_used >= CPU_SATURATED * cores
