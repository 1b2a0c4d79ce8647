"""Prometheus range results become scrapes; answers that are not Prometheus are refused."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.advise.errors import AdviseInputError
from rayop.advise.prometheus import _result, query, snapshots


def _series(metric_name: str, values: list[tuple[float, str]], **labels: str) -> dict[str, Any]:
    metric = {"__name__": metric_name, "job": "rayop", "instance": "10.0.0.1:8080", **labels}
    return {"metric": metric, "values": [[t, v] for t, v in values]}


def test_each_timestamp_becomes_one_scrape_without_the_target_labels() -> None:
    result = [
        _series(
            "controller_runtime_reconcile_total",
            [(100, "1"), (115, "7")],
            controller="rayjob",
            result="success",
        ),
        _series(
            "workqueue_depth",
            [(100, "0"), (115, "3")],
            name="rayjob",
            controller="rayjob",
            priority="",
        ),
    ]
    scrapes = snapshots(result, start=100.0, source="p")
    assert [s.t for s in scrapes] == [0.0, 15.0]
    assert scrapes[1].snapshot.total("controller_runtime_reconcile_total", controller="rayjob") == 7
    assert scrapes[1].snapshot.total("workqueue_depth", name="rayjob") == 3
    assert all("job" not in dict(labels) for _, labels in scrapes[0].snapshot.samples)


def test_two_targets_are_refused_not_added_together() -> None:
    result = [
        _series("controller_runtime_reconcile_total", [(1, "1")], controller="rayjob"),
        {
            **_series("controller_runtime_reconcile_total", [(1, "1")], controller="rayjob"),
            "metric": {
                "__name__": "controller_runtime_reconcile_total",
                "job": "rayop",
                "instance": "b",
            },
        },
    ]
    with pytest.raises(AdviseInputError, match=r"2 scrape targets .* narrow --selector to one"):
        snapshots(result, start=0.0, source="p")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>Grafana</html>", "is not a Prometheus HTTP API \\(the answer is not JSON\\)"),
        (b'{"hello": 1}', "no status in the answer"),
        (
            b'{"status": "error", "errorType": "bad_data", "error": "parse error"}',
            "refused the query: bad_data parse error",
        ),
        (
            b'{"status": "success", "data": {"resultType": "vector", "result": []}}',
            "without a matrix result",
        ),
    ],
)
def test_answers_that_are_not_a_range_result_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(AdviseInputError, match=message):
        _result(body, "http://p:9090")


def test_the_query_reads_only_what_a_verdict_needs_and_the_selector_narrows_it() -> None:
    assert query('job="kuberay"') == (
        '{__name__=~"controller_runtime_.*|workqueue_.*|rest_client_.*|rayop_.*|go_info",job="kuberay"}'
    )
