"""The side-by-side benchmark at a small size, so that it cannot rot (issue: performance).

``benchmarks/side_by_side.py`` runs KubeRay v1.7.0 and rayop one after the other, each on a fresh
real control plane with kwok, and measures them with ``rayop bench``. Here it runs at 20
RayClusters x 5 workers, one concurrency. The figures (time, CPU, memory) are not asserted:
on shared CI cores they are noise; the table is printed for the log, and the full-size run is
made by hand (docs/performance.md). What is asserted is that both operators did the same work:
every cluster ready, the same pod creates and none duplicated, the same events by reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.real, pytest.mark.timeout(60, func_only=True)]
"""The benchmark runs in the module fixture (its own 20-minute limit); each test only reads it."""

REPO = Path(__file__).resolve().parents[2]
CLUSTERS, WORKERS = 20, 5


@pytest.fixture(scope="module")
def runs(
    controlplane_binaries: Path, kuberay_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Runs the benchmark once; returns each operator's result."""
    out = tmp_path_factory.mktemp("side-by-side") / "runs.json"
    cmd = [
        sys.executable, str(REPO / "benchmarks" / "side_by_side.py"),
        "--clusters", str(CLUSTERS), "--workers", str(WORKERS), "--concurrency", "1",
        "--kuberay", str(kuberay_binary), "--timeout", "300", "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=False)
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    return {run["operator"]: run["result"] for run in json.loads(out.read_text())}


@pytest.mark.parametrize("operator", ["kuberay", "rayop"])
def test_every_cluster_becomes_ready_with_no_duplicate_pod(
    runs: dict[str, dict[str, Any]], operator: str
) -> None:
    result = runs[operator]
    assert not result["timed_out"]
    assert result["pod_creates"] == CLUSTERS * (1 + WORKERS)
    assert result["duplicate_pod_creates"] == 0


@pytest.mark.parametrize("operator", ["kuberay", "rayop"])
def test_the_audit_log_tells_the_operators_requests_apart(
    runs: dict[str, dict[str, Any]], operator: str
) -> None:
    requests = runs[operator]["requests"]
    assert requests["reconcile_by_verb_resource"]["create pods"] == CLUSTERS * (1 + WORKERS)
    assert requests["reconcile_by_verb_resource"]["create services"] == CLUSTERS
    assert requests["event_writes_by_verb_resource"]["create events"] >= 3 * CLUSTERS
    assert requests["others_by_agent"]["kube-scheduler"] >= CLUSTERS * (1 + WORKERS)


def _lost_occurrences(result: dict[str, Any]) -> int:
    """Occurrences the operator's own recorder lost, as the audit log shows them: a series PATCH
    answered 404 (it ran before the Event's create had landed) whose re-create was answered 409
    leaves that Event at its first count. client-go's tools/events does this under load (seen
    once for KubeRay on a loaded machine: 39 occurrences of 40)."""
    failures = result["requests"]["failures"]
    return min(int(failures.get("patch events 404", 0)), int(failures.get("create events 409", 0)))


def test_the_same_events_by_reason(runs: dict[str, dict[str, Any]]) -> None:
    rayop, kuberay = runs["rayop"]["events_by_reason"], runs["kuberay"]["events_by_reason"]
    lost = {side: _lost_occurrences(runs[side]) for side in ("rayop", "kuberay")}
    if not any(lost.values()):
        assert rayop == kuberay
        return
    # Which reason a lost occurrence had is not in the audit log (Metadata level): the Event
    # objects must be the same by reason, and the occurrences differ by what was lost.
    assert sorted(rayop) == sorted(kuberay), (rayop, kuberay)
    assert {r: c[0] for r, c in rayop.items()} == {r: c[0] for r, c in kuberay.items()}
    gaps = {r: rayop[r][1] - kuberay[r][1] for r in rayop}
    assert sum(gaps.values()) == lost["kuberay"] - lost["rayop"], (rayop, kuberay, lost)
    assert all(abs(g) <= sum(lost.values()) for g in gaps.values()), (rayop, kuberay, lost)
