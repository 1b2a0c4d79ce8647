"""grafana/rayop-dashboard.json: every query names a metric rayop exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from rayop.controllers.assembly.kuberay_metrics import KUBERAY_METRIC_NAMES, KubeRayMetrics
from rayop.kube.metrics import RestClientMetrics
from rayop.runtime.metrics import OperatorMetrics
from rayop.testing import FakeCache
from rayop.testing.clock import FakeClock

from .manifests import REPO

DASHBOARD = REPO / "grafana" / "rayop-dashboard.json"

PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "le", "inf", "nan",
}  # fmt: skip
REQUIRED = {
    "controller_runtime_active_workers",
    "controller_runtime_max_concurrent_reconciles",
    "workqueue_depth",
    "workqueue_queue_duration_seconds_bucket",
    "controller_runtime_reconcile_time_seconds_bucket",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_total",
    "rest_client_request_duration_seconds_bucket",
    "rest_client_rate_limiter_duration_seconds_bucket",
    "leader_election_master_status",
}
PROCESS_SERIES = {
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_cpu_seconds_total",
    "process_open_fds",
    "process_max_fds",
}


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in node.get("panels", []):
        yield panel
        yield from panels(panel)


def expressions() -> list[str]:
    board = dashboard()
    exprs = [t["expr"] for p in panels(board) for t in p.get("targets", []) if "expr" in t]
    for variable in board["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            exprs.append(query["query"])
    return exprs


def metric_names(expr: str) -> set[str]:
    """Returns the metric names a PromQL expression selects (functions, labels and keywords out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    text = re.sub(r"^label_values\((\w+),\s*\w+\)$", r"\1", text.strip())
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word, rest = match.group(), text[match.end() :].lstrip()
        if rest.startswith("(") or word.lower() in PROMQL_WORDS:
            continue  # a function call or a keyword
        if text[max(0, match.start() - 1)] in "0123456789.":
            continue  # an exponent such as the e in 1e-9
        names.add(word)
    return names


def exported_series() -> set[str]:
    """Returns every sample name rayop exposes (``x_bucket``, ``x_total``...), once exercised."""
    metrics = OperatorMetrics()
    rest = RestClientMetrics(metrics.registry)
    metrics.init_controller("raycluster", 1)
    queue = metrics.queue_metrics("raycluster", FakeClock())
    queue.on_add("ns/a", 0)
    queue.on_get("ns/a", 0)
    queue.on_done("ns/a")
    queue.on_retry()
    metrics.leader_election_master_status.labels(name="ray-operator-leader").set(1)
    rest.observe_attempt(200, "GET", "api:6443")
    rest.observe_request("GET", "api:6443", 0.01)
    rest.observe_rate_limiter("GET", "api:6443", 0.0)
    rest.observe_retry(429, "GET", "api:6443")
    metrics.registry.register(exercised_kuberay_metrics())
    samples = set()
    for line in metrics.render().decode().splitlines():
        if line and not line.startswith("#"):
            samples.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return samples


def one_object() -> FakeCache:
    """A cache holding one object."""
    return FakeCache({"metadata": {"name": "a", "namespace": "ns", "uid": "u"}, "status": {}})


def exercised_kuberay_metrics() -> KubeRayMetrics:
    """Returns the kuberay_* collectors over one object of each kind, both durations set."""
    kuberay = KubeRayMetrics(one_object(), one_object(), one_object(), wall=FakeClock().wall)
    kuberay.cluster_provisioned_duration.set(["a", "ns", "u"], 1.0)
    kuberay.job_execution_duration.set(["a", "ns", "u", "Complete", "0"], 1.0)
    return kuberay


def test_the_extractor_finds_metrics_and_skips_functions_and_labels() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (controller, le) (rate(foo_bucket{controller=~"$c"}'
        "[$__rate_interval]))) / clamp_min(bar_total, 1e-9)"
    )
    assert metric_names(expr) == {"foo_bucket", "bar_total"}
    assert metric_names("label_values(up, job)") == {"up"}


def test_every_query_names_a_metric_rayop_exports() -> None:
    exported = exported_series()
    assert {"workqueue_depth", "rest_client_request_duration_seconds_bucket"} <= exported
    for expr in expressions():
        names = metric_names(expr)
        assert names, f"no metric found in {expr!r}"
        for name in names:
            assert name in exported, f"{name} (in {expr!r}) is not exported by rayop"


def test_the_dashboard_has_the_panels_the_concurrency_decision_needs() -> None:
    used = set().union(*(metric_names(e) for e in expressions()))
    assert used >= REQUIRED, REQUIRED - used
    quantiles = [e for e in expressions() if "histogram_quantile(0.99" in e]
    for histogram in ("workqueue_queue_duration_seconds", "controller_runtime_reconcile_time_seconds",
                      "rest_client_request_duration_seconds", "rest_client_rate_limiter_duration_seconds"):  # fmt: skip
        assert any(f"{histogram}_bucket" in e and "le)" in e for e in quantiles), histogram


def test_controller_queries_are_templated_by_controller() -> None:
    board = dashboard()
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert "controller" in variables and variables["controller"]["multi"]
    for expr in expressions():
        if re.search(r"\b(controller_runtime_|workqueue_)", expr) and "label_values" not in expr:
            assert 'controller=~"$controller"' in expr, expr
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))


def test_every_kuberay_metric_and_the_process_memory_have_a_panel() -> None:
    used = set().union(*(metric_names(e) for e in expressions()))
    assert used >= set(KUBERAY_METRIC_NAMES) | PROCESS_SERIES, (
        set(KUBERAY_METRIC_NAMES) | PROCESS_SERIES
    ) - used
    exported = exported_series()
    assert set(KUBERAY_METRIC_NAMES) | PROCESS_SERIES <= exported
