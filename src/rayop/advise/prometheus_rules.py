"""The verdict's two headline cases as Prometheus recording and alerting rules.

Generated from the thresholds of :mod:`rayop.runtime.concurrency.rules` (``deploy/generate.py``
writes them to ``deploy/monitoring/`` as a plain rules file and a PrometheusRule, and to the
chart), so the rules, ``rayop advise`` and ``rayop bench`` cannot disagree on a threshold:

- ``RayOperatorWorkersSaturated``: a controller's workers were all busy in 80 % of the last
  10 minutes, its queue wait p99 reached 1 s or its queue grew, and the API was calm (no
  token-bucket wait of 50 ms a request, or of 10 ms and more than the server's latency; no
  latency rise of 1.5x and 20 ms above its lowest of the last hour; p99 within the 1 s SLO)
  with errors under 10 %: raise ``--reconcile-concurrency``.
- ``RayOperatorMoreWorkersWouldContend``: saturated the same way, but the client's token bucket
  or the API server is the limit: more workers would add contention.

The series are controller-runtime's and client-go's, which rayop and KubeRay v1.7.0 both
export; ``job`` and ``instance`` (what Prometheus adds to a scrape target) keep two operators
apart. Rule naming follows https://prometheus.io/docs/practices/rules/.
"""

from __future__ import annotations

from typing import Any

from rayop.runtime.concurrency import rules

WINDOW = "10m"
"""How far back saturation, queue wait, errors and the latency comparison look."""
RATE = "5m"
"""The rate window of API latency and throttling."""
BASE = "1h"
"""API latency is judged against its lowest over this long (its base, as the adaptive law
keeps one): a slowdown stays a slowdown until it has lasted an hour, not only while it is new."""
TARGET = "job, instance"

SATURATED = "controller:workers_saturated:bool"
BUSY_SHARE = f"controller:workers_saturated:avg{WINDOW}"
WAIT_P99 = f"controller:workqueue_wait_seconds:p99_{WINDOW}"
DEPTH_TREND = f"controller:workqueue_depth:deriv{WINDOW}_per_minute"
ERROR_SHARE = f"controller:reconcile_errors:share{WINDOW}"
LATENCY = f"instance:rest_client_latency_seconds:mean{RATE}"
THROTTLE = f"instance:rest_client_throttle_seconds:mean{RATE}"
P99 = f"instance:rest_client_request_seconds:p99_{RATE}"


def _by_name(expr: str) -> str:
    """Copies the workqueue's ``name`` label into ``controller`` (they hold the same value)."""
    return f'label_replace({expr}, "controller", "$1", "name", "(.+)")'


def _records() -> list[dict[str, str]]:
    requests = f"sum by ({TARGET}) (rate(rest_client_request_duration_seconds_count[{RATE}]))"
    waited = f"sum by ({TARGET}) (rate(rest_client_rate_limiter_duration_seconds_sum[{RATE}]))"
    spent = f"sum by ({TARGET}) (rate(rest_client_request_duration_seconds_sum[{RATE}]))"
    return [
        {
            "record": SATURATED,
            "expr": "(controller_runtime_active_workers >= bool "
            "controller_runtime_max_concurrent_reconciles)"
            " * (controller_runtime_max_concurrent_reconciles > bool 0)",
        },
        {"record": BUSY_SHARE, "expr": f"avg_over_time({SATURATED}[{WINDOW}])"},
        {
            "record": WAIT_P99,
            "expr": _by_name(
                "histogram_quantile(0.99, sum by (job, instance, name, le) "
                f"(rate(workqueue_queue_duration_seconds_bucket[{WINDOW}])))"
            ),
        },
        {
            "record": DEPTH_TREND,
            "expr": _by_name(
                f"60 * deriv((sum by (job, instance, name) (workqueue_depth))[{WINDOW}:])"
            ),
        },
        {
            "record": ERROR_SHARE,
            "expr": f"sum by (job, instance, controller) "
            f"(rate(controller_runtime_reconcile_errors_total[{WINDOW}]))"
            f" / sum by (job, instance, controller) "
            f"(rate(controller_runtime_reconcile_total[{WINDOW}]))",
        },
        {"record": LATENCY, "expr": f"({spent} - ({waited} or {spent} * 0)) / {requests}"},
        {"record": THROTTLE, "expr": f"{waited} / {requests}"},
        {
            "record": P99,
            "expr": "histogram_quantile(0.99, sum by (job, instance, le) "
            f"(rate(rest_client_request_duration_seconds_bucket[{RATE}])))",
        },
    ]


def _saturated() -> str:
    return (
        f"{BUSY_SHARE} >= {rules.BUSY_SATURATED:g}"
        f" and on (job, instance, controller) ({WAIT_P99} >= {rules.QUEUE_BACKLOG_SECONDS:g}"
        f" or {DEPTH_TREND} > 1)"
    )


def _api_limits() -> str:
    """The API is the limit: throttled, latency risen above its base, or p99 over the SLO."""
    base = f"min_over_time({LATENCY}[{BASE}])"
    return (
        f"{THROTTLE} >= {rules.THROTTLE_WAIT_LIMIT:g}"
        f" or ({THROTTLE} >= {rules.THROTTLE_WAIT_FLOOR:g} and {THROTTLE} >= {LATENCY})"
        f" or ({LATENCY} >= {rules.LATENCY_RISE_RATIO:g} * {base}"
        f" and {LATENCY} - {base} >= {rules.LATENCY_RISE_FLOOR:g})"
        f" or {P99} > {rules.API_P99_SLO_SECONDS:g}"
    )


def _alerts() -> list[dict[str, Any]]:
    return [
        {
            "alert": "RayOperatorWorkersSaturated",
            "expr": f"({_saturated()})"
            f" unless on (job, instance) ({_api_limits()})"
            f" unless on (job, instance, controller) ({ERROR_SHARE} >= {rules.ERRORS_HIGH:g})",
            "for": WINDOW,
            "labels": {"severity": "info"},
            "annotations": {
                "summary": "{{ $labels.controller }}: workers saturated with a backlog and a "
                "calm API; raise --reconcile-concurrency",
                "description": "All workers busy {{ $value | humanizePercentage }} of the last "
                f"{WINDOW} with queued work, and no API throttling, slowdown or error rise. "
                "`rayop advise` says to what.",
            },
        },
        {
            "alert": "RayOperatorMoreWorkersWouldContend",
            "expr": f"({_saturated()}) and on (job, instance) ({_api_limits()})",
            "for": WINDOW,
            "labels": {"severity": "info"},
            "annotations": {
                "summary": "{{ $labels.controller }}: workers saturated, but the API client or "
                "server is the limit; adding workers would add contention",
                "description": "Raise --qps/--burst if the token-bucket wait "
                f"({THROTTLE}) is high; otherwise the API server is the limit.",
            },
        },
    ]


def rule_groups() -> dict[str, Any]:
    """Returns the rules as a Prometheus rules file (``groups:``)."""
    return {
        "groups": [
            {"name": "ray-operator-concurrency.records", "rules": _records()},
            {"name": "ray-operator-concurrency.alerts", "rules": _alerts()},
        ]
    }
