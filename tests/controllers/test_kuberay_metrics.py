"""The kuberay_* collectors on hand-fed caches: names, labels and values exactly as KubeRay's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from rayop.controllers.assembly.kuberay_metrics import KUBERAY_METRIC_NAMES, KubeRayMetrics
from rayop.runtime.informers.indexer import Obj
from rayop.testing import FakeCache

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def obj(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    created: datetime = NOW - timedelta(seconds=90),
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": labels or {},
            "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "status": status or {},
    }


def cond(kind: str, value: str) -> dict[str, Any]:
    return {"conditions": [{"type": kind, "status": value}]}


def samples(metrics: KubeRayMetrics) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in metrics.collect():
        assert family.type == "gauge"
        out[family.name] = [(dict(s.labels), s.value) for s in family.samples]
    return out


def new_metrics(
    clusters: FakeCache | None = None,
    jobs: FakeCache | None = None,
    services: FakeCache | None = None,
) -> KubeRayMetrics:
    def given(cache: FakeCache | None) -> FakeCache:
        return FakeCache() if cache is None else cache  # an empty cache is falsy (len 0)

    return KubeRayMetrics(given(clusters), given(jobs), given(services), wall=lambda: NOW)


def ident(name: str) -> dict[str, str]:
    return {"name": name, "namespace": "ns", "uid": f"uid-{name}"}


def test_cluster_info_owner_kind_and_provisioned_condition() -> None:
    clusters = FakeCache(
        obj("plain", status=cond("RayClusterProvisioned", "True")),
        obj("of-job", labels={"ray.io/originated-from-crd": "RayJob"}),
        obj(
            "of-svc",
            labels={"ray.io/originated-from-crd": "RayService"},
            status=cond("RayClusterProvisioned", "False"),
        ),
    )
    got = samples(new_metrics(clusters=clusters))
    assert got["kuberay_cluster_info"] == [
        ({**ident("plain"), "owner_kind": "None"}, 1.0),
        ({**ident("of-job"), "owner_kind": "RayJob"}, 1.0),
        ({**ident("of-svc"), "owner_kind": "RayService"}, 1.0),
    ]
    assert got["kuberay_cluster_condition_provisioned"] == [
        ({**ident("plain"), "condition": "true"}, 1.0),
        ({**ident("of-job"), "condition": "false"}, 1.0),
        ({**ident("of-svc"), "condition": "false"}, 1.0),
    ]


def test_job_info_and_deployment_status() -> None:
    jobs = FakeCache(obj("j1", status={"jobDeploymentStatus": "Running"}), obj("j2"))
    got = samples(new_metrics(jobs=jobs))
    assert got["kuberay_job_info"] == [(ident("j1"), 1.0), (ident("j2"), 1.0)]
    assert got["kuberay_job_deployment_status"] == [
        ({**ident("j1"), "deployment_status": "Running"}, 1.0),
        ({**ident("j2"), "deployment_status": ""}, 1.0),
    ]


def test_service_info_ready_and_upgrade_conditions() -> None:
    both = {
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "UpgradeInProgress", "status": "True"},
        ]
    }
    services = FakeCache(obj("s1", status=both), obj("s2", status=cond("Ready", "False")))
    got = samples(new_metrics(services=services))
    assert got["kuberay_service_info"] == [(ident("s1"), 1.0), (ident("s2"), 1.0)]
    assert got["kuberay_service_condition_ready"] == [
        ({**ident("s1"), "condition": "true"}, 1.0),
        ({**ident("s2"), "condition": "false"}, 1.0),
    ]
    assert got["kuberay_service_condition_upgrade_in_progress"] == [
        ({**ident("s1"), "condition": "true"}, 1.0),
        ({**ident("s2"), "condition": "false"}, 1.0),
    ]


def test_scrape_reads_the_cache_at_scrape_time() -> None:
    jobs = FakeCache()
    metrics = new_metrics(jobs=jobs)
    assert samples(metrics)["kuberay_job_info"] == []
    jobs.put(obj("late"))
    assert samples(metrics)["kuberay_job_info"] == [(ident("late"), 1.0)]


def test_provisioned_duration_set_only_when_the_condition_turns_true() -> None:
    metrics = new_metrics()
    unset = obj("rc")
    false = obj("rc", status=cond("RayClusterProvisioned", "False"))
    true = obj("rc", status=cond("RayClusterProvisioned", "True"))
    metrics.observe_cluster_status(unset, false)
    assert samples(metrics)["kuberay_cluster_provisioned_duration_seconds"] == []
    metrics.observe_cluster_status(false, true)
    assert samples(metrics)["kuberay_cluster_provisioned_duration_seconds"] == [(ident("rc"), 90.0)]
    later = obj("rc", status=cond("RayClusterProvisioned", "True"), created=NOW)
    metrics.observe_cluster_status(true, later)  # still True: not a transition
    assert samples(metrics)["kuberay_cluster_provisioned_duration_seconds"] == [(ident("rc"), 90.0)]
    metrics.forget_cluster(true)
    assert samples(metrics)["kuberay_cluster_provisioned_duration_seconds"] == []


def job(status: str, *, failed: int | None = None) -> Obj:
    body: dict[str, Any] = {
        "jobDeploymentStatus": status,
        "startTime": (NOW - timedelta(seconds=42)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if failed is not None:
        body["failed"] = failed
    return obj("job", status=body)


def test_execution_duration_on_terminal_and_retrying_transitions() -> None:
    metrics = new_metrics()
    metrics.observe_job_status(job("Initializing"), job("Running"))
    assert samples(metrics)["kuberay_job_execution_duration_seconds"] == []
    metrics.observe_job_status(job("Running"), job("Retrying", failed=1))
    metrics.observe_job_status(job("Running", failed=1), job("Complete", failed=1))
    metrics.observe_job_status(job("Complete"), job("Failed"))  # from terminal: ignored
    key = {**ident("job")}
    assert samples(metrics)["kuberay_job_execution_duration_seconds"] == [
        ({**key, "job_deployment_status": "Complete", "retry_count": "1"}, 42.0),
        ({**key, "job_deployment_status": "Retrying", "retry_count": "0"}, 42.0),
    ]
    metrics.forget_job(job("Complete"))
    assert samples(metrics)["kuberay_job_execution_duration_seconds"] == []


def test_registered_exposition_names_every_metric_once() -> None:
    registry = CollectorRegistry()
    metrics = new_metrics(FakeCache(obj("rc")), FakeCache(obj("j")), FakeCache(obj("s")))
    registry.register(metrics)
    text = generate_latest(registry).decode()
    for name in KUBERAY_METRIC_NAMES:
        assert text.count(f"# TYPE {name} gauge\n") == 1, name
    assert 'kuberay_cluster_info{name="rc",namespace="ns",owner_kind="None",uid="uid-rc"} 1.0' in (
        text
    )
