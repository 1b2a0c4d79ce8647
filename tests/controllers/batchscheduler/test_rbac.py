"""The chart and deploy/ grant each batch scheduler exactly the rules rayop's code needs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rayop.controllers.batchscheduler.rbac import BATCH_SCHEDULER_RULES

REPO = Path(__file__).resolve().parents[3]
CHART_RULES = REPO / "helm" / "rayop" / "templates" / "_batch_scheduler_rules.tpl"
BLOCK = re.compile(r"# batch scheduler: (?P<name>[a-z-]+)\n(?P<body>.*?)\{\{- end", re.S)


def expected(name: str) -> list[dict[str, Any]]:
    return [
        {"apiGroups": [r.api_group], "resources": list(r.resources), "verbs": list(r.verbs)}
        for r in BATCH_SCHEDULER_RULES[name]
    ]


def test_the_chart_grants_what_the_code_needs() -> None:
    blocks = {m["name"]: yaml.safe_load(m["body"]) for m in BLOCK.finditer(CHART_RULES.read_text())}
    assert set(blocks) == set(BATCH_SCHEDULER_RULES)
    for name, rules in blocks.items():
        assert rules == expected(name), name


@pytest.mark.parametrize("name", sorted(BATCH_SCHEDULER_RULES))
def test_the_deploy_component_grants_what_the_code_needs(name: str) -> None:
    role, binding = yaml.safe_load_all(
        (REPO / "deploy" / "batch-schedulers" / name / "rbac.yaml").read_text()
    )
    assert role["rules"] == expected(name)
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "rayop", "namespace": "rayop-system"}
    ]


def test_the_verbs_cover_the_calls() -> None:
    """Volcano gets, creates and updates PodGroups; scheduler-plugins gets and creates; WAS
    also deletes (the stale objects) and updates (the protection finalizer)."""
    verbs = {name: set(rules[0].verbs) for name, rules in BATCH_SCHEDULER_RULES.items()}
    assert {"get", "create", "update"} <= verbs["volcano"]
    assert {"get", "create"} <= verbs["scheduler-plugins"]
    assert {"get", "create", "update", "delete"} <= verbs["kubernetes-was"]
