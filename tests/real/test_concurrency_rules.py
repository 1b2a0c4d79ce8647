"""The concurrency rules under Prometheus' own `promtool test rules`, on the verdict's scenarios.

Each scenario's series come from the fluid model (rayop's own metric classes), scraped every
15 s for 30 minutes; promtool evaluates deploy/monitoring/concurrency_rules.yaml over them and
checks that exactly the scenario's alert fires at the end, and `rayop advise` gives the
scenario's verdict over the same series (tests/advise/test_verdicts.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.advise.fluid_operator import FluidOperator
from tests.advise.scenarios import MINUTES, SCENARIOS, Scenario
from tests.real.prometheus_support import INSTANCE, JOB, input_series, prometheus_bin

pytestmark = pytest.mark.real

RULES = Path(__file__).resolve().parents[2] / "deploy" / "monitoring" / "concurrency_rules.yaml"
ALERTS = ("RayOperatorWorkersSaturated", "RayOperatorMoreWorkersWouldContend")
ANNOTATIONS = {
    "RayOperatorWorkersSaturated": {
        "summary": "raycluster: workers saturated with a backlog and a calm API; raise "
        "--reconcile-concurrency",
        "description": "All workers busy 100% of the last 10m with queued work, and no API "
        "throttling, slowdown or error rise. `rayop advise` says to what.",
    },
    "RayOperatorMoreWorkersWouldContend": {
        "summary": "raycluster: workers saturated, but the API client or server is the limit; "
        "adding workers would add contention",
        "description": "Raise --qps/--burst if the token-bucket wait "
        "(instance:rest_client_throttle_seconds:mean5m) is high; otherwise the API server is "
        "the limit.",
    },
}


def _expected(alert: str, scenario: Scenario) -> list[dict[str, Any]]:
    if alert != scenario.alert:
        return []
    labels = {"severity": "info", "controller": "raycluster", "job": JOB, "instance": INSTANCE}
    return [{"exp_labels": labels, "exp_annotations": ANNOTATIONS[alert]}]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_exactly_the_scenarios_alert_fires(scenario: Scenario, tmp_path: Path) -> None:
    window = FluidOperator(workers=scenario.workers).run(list(scenario.loads), every=15)
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": input_series(window),
                "alert_rule_test": [
                    {
                        "eval_time": f"{MINUTES}m",
                        "alertname": alert,
                        "exp_alerts": _expected(alert, scenario),
                    }
                    for alert in ALERTS
                ],
            }
        ],
    }
    path = tmp_path / "rules_test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False, width=10_000))
    proc = subprocess.run(
        [str(prometheus_bin("promtool")), "test", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_rules_file_passes_promtool_check() -> None:
    proc = subprocess.run(
        [str(prometheus_bin("promtool")), "check", "rules", str(RULES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_dashboard_query_is_promql_promtool_accepts(tmp_path: Path) -> None:
    panels = json.loads((RULES.parent / "grafana_dashboard.json").read_text())["panels"]
    records = [
        {"record": f"dashboard:panel:{p['id']}", "expr": t["expr"]}
        for p in panels
        for t in p["targets"]
    ]
    path = tmp_path / "dashboard_rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    proc = subprocess.run(
        [str(prometheus_bin("promtool")), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
