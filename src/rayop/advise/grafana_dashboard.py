"""A Grafana dashboard of the verdict's inputs side by side, on the recorded series of the rules.

One row of time series per signal the verdict reads, each with its threshold drawn: workers
saturated (share of the last 10 minutes, 80 %), queue wait p99 (1 s), queue depth trend, reconcile
error share (10 %), API latency against its base of the last hour, token-bucket wait per request
(50 ms) and API p99 (the 1 s SLO). ``deploy/generate.py`` writes it to
``deploy/monitoring/grafana_dashboard.json`` (Grafana's dashboard JSON model:
https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/).
"""

from __future__ import annotations

from typing import Any

from rayop.advise import prometheus_rules as r
from rayop.runtime.concurrency import rules

UID = "rayop-concurrency"


def _panel(
    index: int, title: str, expr: str, legend: str, unit: str, threshold: float | None
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    if threshold is not None:
        steps.append({"color": "red", "value": threshold})
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "gridPos": {"h": 8, "w": 12, "x": (index % 2) * 12, "y": (index // 2) * 8},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": legend}],
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "thresholds": {"mode": "absolute", "steps": steps},
                "custom": {"thresholdsStyle": {"mode": "line"}},
            },
            "overrides": [],
        },
    }


def panels() -> list[dict[str, Any]]:
    """Returns the panels, in reading order."""
    per_controller = "{{job}}/{{instance}} {{controller}}"
    per_target = "{{job}}/{{instance}}"
    specs = [
        ("Workers all busy (share of 10m)", r.BUSY_SHARE, per_controller, "percentunit",
         rules.BUSY_SATURATED),
        ("Queue wait p99", r.WAIT_P99, per_controller, "s", rules.QUEUE_BACKLOG_SECONDS),
        ("Queue depth trend (items/min)", r.DEPTH_TREND, per_controller, "short", 1.0),
        ("Reconcile errors (share of 10m)", r.ERROR_SHARE, per_controller, "percentunit",
         rules.ERRORS_HIGH),
        ("API latency, throttling excluded (and its base)",
         f"{r.LATENCY} or label_replace(min_over_time({r.LATENCY}[{r.BASE}]), "
         '"base", "lowest of 1h", "", "")', per_target + " {{base}}", "s", None),
        ("Token-bucket wait per request", r.THROTTLE, per_target, "s",
         rules.THROTTLE_WAIT_LIMIT),
        ("API request p99", r.P99, per_target, "s", rules.API_P99_SLO_SECONDS),
        ("Reconciles per second",
         "sum by (job, instance, controller) (rate(controller_runtime_reconcile_total[5m]))",
         per_controller, "ops", None),
    ]  # fmt: skip
    return [_panel(i, *spec) for i, spec in enumerate(specs)]


def dashboard() -> dict[str, Any]:
    """Returns the dashboard's JSON model."""
    return {
        "uid": UID,
        "title": "Ray operator: should --reconcile-concurrency change?",
        "description": "The inputs of `rayop advise` and of the RayOperatorWorkersSaturated / "
        "RayOperatorMoreWorkersWouldContend alerts, for rayop and KubeRay.",
        "tags": ["ray", "kuberay", "rayop"],
        "schemaVersion": 39,
        "time": {"from": "now-3h", "to": "now"},
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "label": "Prometheus",
                }
            ]
        },
        "panels": panels(),
    }
