"""benchmarks/side_by_side.py starts the bench only once the operator's RayCluster cache has
listed, read from the audit log: a list by the bench's own clients does not count."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _entry(agent: str, verb: str, resource: str, code: int = 200) -> str:
    return json.dumps(
        {
            "stage": "ResponseComplete",
            "verb": verb,
            "userAgent": agent,
            "objectRef": {"resource": resource},
            "responseStatus": {"code": code},
        }
    )


def test_only_an_operators_answered_list_of_rayclusters_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    operator_has_listed = importlib.import_module("side_by_side").operator_has_listed

    audit = tmp_path / "audit.log"
    assert not operator_has_listed(audit), "no log yet"
    lines = [
        _entry("rayop-side-by-side", "list", "rayclusters"),  # the benchmark's own CRD check
        _entry("rayop-bench", "list", "rayclusters"),
        _entry("kuberay-operator/v1.7.0", "list", "rayclusters", code=404),  # CRD not served
        _entry("kuberay-operator/v1.7.0", "list", "pods"),
        _entry("kuberay-operator/v1.7.0", "watch", "rayclusters"),
    ]
    audit.write_text("\n".join(lines) + "\n")
    assert not operator_has_listed(audit)
    with audit.open("a") as log:
        log.write(_entry("kuberay-operator/v1.7.0", "list", "rayclusters") + "\n")
    assert operator_has_listed(audit)
    sys.modules.pop("side_by_side", None)
