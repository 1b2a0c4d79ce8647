"""The operator's /metrics: KubeRay's nine kuberay_* metrics with --enable-metrics (and none
without), the process series always."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rayop.controllers.assembly.build import build_operator
from rayop.controllers.assembly.kuberay_metrics import KUBERAY_METRIC_NAMES
from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.run import new_client
from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.runtime.metrics import OperatorMetrics
from rayop.sim.dashboard.head import DashboardConfig
from rayop.testing import ALL_KINDS, FAST_KUBELET, eventually, open_control_plane

from .operator_env import E2eEnv, open_env
from .raycluster_env import simple_cluster
from .rayjob_env import small_rayjob
from .rayservice_env import small_rayservice

pytestmark = pytest.mark.asyncio

DASHBOARD = DashboardConfig(
    job_pending_seconds=0.1,
    job_run_seconds=0.3,
    job_stop_seconds=0.1,
    submitter_poll_seconds=0.1,
    serve_deploy_seconds=0.3,
)
Series = dict[str, list[tuple[dict[str, str], float]]]


def scrape(env: E2eEnv) -> Series:
    """Returns every sample of the manager's exposition, by family name."""
    text = env.manager.render_metrics().decode()
    out: Series = {}
    for family in text_string_to_metric_families(text):
        out.setdefault(family.name, []).extend((dict(s.labels), s.value) for s in family.samples)
    return out


def of(series: Series, name: str, namespace: str) -> list[dict[str, str]]:
    return [labels for labels, _ in series.get(name, []) if labels.get("namespace") == namespace]


@contextlib.asynccontextmanager
async def open_metrics_env(*, enable_metrics: bool) -> AsyncIterator[E2eEnv]:
    plane = {"kubelet": FAST_KUBELET, "dashboard": DASHBOARD}
    operator = {"controllers": ALL_KINDS, "concurrency": 2, "enable_metrics": enable_metrics}
    async with open_env(E2eEnv, plane=plane, operator=operator) as env:
        yield env


def status(env: E2eEnv, resource: Any, ns: str, name: str) -> dict[str, Any]:
    return (env.stored(resource, ns, name) or {}).get("status") or {}


def ready(env: E2eEnv, ns: str, name: str) -> bool:
    conditions = status(env, RAY_SERVICES, ns, name).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def test_the_nine_kuberay_metrics_with_kubernetes_labels() -> None:
    async with open_metrics_env(enable_metrics=True) as env:
        ns = await env.namespace("metrics")
        rc = await env.plane.create(RAY_CLUSTERS, simple_cluster("rc", workers=1), ns)
        job = await env.plane.create(RAY_JOBS, small_rayjob("job"), ns)
        svc = await env.plane.create(RAY_SERVICES, small_rayservice("svc"), ns)
        await eventually(
            lambda: (
                env.plane.raycluster_converged(ns, "rc")
                and status(env, RAY_JOBS, ns, "job").get("jobDeploymentStatus") == "Complete"
                and ready(env, ns, "svc")
            ),
            timeout=30,
            what="the RayCluster, RayJob and RayService converge",
        )

        def cache_caught_up() -> bool:
            # The collectors read the operator's cache, which may lag the store by an event.
            now = scrape(env)
            return (
                any(
                    c["condition"] == "true" for c in of(now, "kuberay_service_condition_ready", ns)
                )
                and any(
                    c["deployment_status"] == "Complete"
                    for c in of(now, "kuberay_job_deployment_status", ns)
                )
                and any(
                    c["name"] == "rc" and c["condition"] == "true"
                    for c in of(now, "kuberay_cluster_condition_provisioned", ns)
                )
            )

        await eventually(cache_caught_up, timeout=10, what="the operator's cache shows it")
        series = scrape(env)
        assert set(KUBERAY_METRIC_NAMES) <= set(series)
        uid = {o["metadata"]["name"]: o["metadata"]["uid"] for o in (rc, job, svc)}
        job_cluster = status(env, RAY_JOBS, ns, "job")["rayClusterName"]
        svc_cluster = status(env, RAY_SERVICES, ns, "svc")["activeServiceStatus"]["rayClusterName"]

        owners = {c["name"]: c["owner_kind"] for c in of(series, "kuberay_cluster_info", ns)}
        assert owners == {"rc": "None", job_cluster: "RayJob", svc_cluster: "RayService"}
        assert {"name": "rc", "namespace": ns, "uid": uid["rc"], "condition": "true"} in of(
            series, "kuberay_cluster_condition_provisioned", ns
        )
        durations = of(series, "kuberay_cluster_provisioned_duration_seconds", ns)
        assert {"name": "rc", "namespace": ns, "uid": uid["rc"]} in durations
        assert of(series, "kuberay_job_info", ns) == [
            {"name": "job", "namespace": ns, "uid": uid["job"]}
        ]
        assert of(series, "kuberay_job_deployment_status", ns) == [
            {"name": "job", "namespace": ns, "uid": uid["job"], "deployment_status": "Complete"}
        ]
        executions = series["kuberay_job_execution_duration_seconds"]
        assert [labels for labels, _ in executions] == [
            {
                "name": "job",
                "namespace": ns,
                "uid": uid["job"],
                "job_deployment_status": "Complete",
                "retry_count": "0",
            }
        ]
        assert executions[0][1] > 0
        svc_labels = {"name": "svc", "namespace": ns, "uid": uid["svc"]}
        assert of(series, "kuberay_service_info", ns) == [svc_labels]
        assert of(series, "kuberay_service_condition_ready", ns) == [
            {**svc_labels, "condition": "true"}
        ]
        assert of(series, "kuberay_service_condition_upgrade_in_progress", ns) == [
            {**svc_labels, "condition": "false"}
        ]
        assert series["process_resident_memory_bytes"][0][1] > 0

        await env.client.delete(RAY_JOBS, "job", namespace=ns)
        await env.client.delete(RAY_CLUSTERS, "rc", namespace=ns)

        def forgotten() -> bool:
            now = scrape(env)
            return not now["kuberay_job_execution_duration_seconds"] and not any(
                c["name"] == "rc"
                for c in of(now, "kuberay_cluster_provisioned_duration_seconds", ns)
            )

        await eventually(forgotten, timeout=15, what="the deleted objects' duration series go")
        assert not of(scrape(env), "kuberay_job_info", ns)


async def test_without_enable_metrics_no_kuberay_metric_is_exported() -> None:
    async with open_metrics_env(enable_metrics=False) as env:
        ns = await env.namespace("quiet")
        await env.plane.create(RAY_CLUSTERS, simple_cluster("rc", workers=1), ns)
        await eventually(lambda: env.plane.raycluster_converged(ns, "rc"), timeout=20)
        text = env.manager.render_metrics().decode()
        assert "kuberay_" not in text
        assert "process_resident_memory_bytes " in text


@pytest.mark.parametrize("enabled", [True, False])
async def test_rayop_runs_manager_registers_them_only_with_enable_metrics(enabled: bool) -> None:
    async with open_control_plane() as plane:
        settings = OperatorSettings(
            enable_metrics=enabled, metrics_addr="0", health_probe_bind_address="0"
        )
        metrics = OperatorMetrics()
        async with new_client(plane.config, settings, metrics) as client:
            text = build_operator(client, settings, metrics).manager.render_metrics().decode()
    for name in KUBERAY_METRIC_NAMES:
        assert (f"# TYPE {name} gauge\n" in text) is enabled, name
    assert "# TYPE process_resident_memory_bytes gauge\n" in text
