"""calculate_status and status_changed against KubeRay's rules (§3.6, §3.7)."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.controllers.config.options import DEFAULT_OPTIONS
from rayop.controllers.raycluster.services import build_head_service
from rayop.controllers.raycluster.status import (
    ReplicaFailureError,
    StatusUnavailableError,
    status_changed,
)

from ._fixtures import head_pod, load_sample, minimal_cluster, status_of, worker_pod

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:05Z"


def _running(pod: dict[str, Any], name: str, ip: str, *, ready: bool = True) -> dict[str, Any]:
    pod["metadata"]["name"] = name
    pod["status"] = {
        "phase": "Running",
        "podIP": ip,
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                **({} if ready else {"reason": "ContainersNotReady", "message": "not ready"}),
            }
        ],
        "containerStatuses": [
            {
                "name": pod["spec"]["containers"][0]["name"],
                "state": {"running": {}}
                if ready
                else {"waiting": {"reason": "CrashLoopBackOff", "message": "boom"}},
            }
        ],
    }
    return pod


def _world(
    cluster: dict[str, Any], *, ready: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pods = [_running(head_pod(cluster, options=DEFAULT_OPTIONS), "h", "10.0.0.1", ready=ready)]
    for i in range(cluster["spec"]["workerGroupSpecs"][0]["replicas"]):
        group = cluster["spec"]["workerGroupSpecs"][0]
        pods.append(
            _running(worker_pod(cluster, group, options=DEFAULT_OPTIONS), f"w{i}", f"10.0.1.{i}")
        )
    svc = build_head_service(cluster, options=DEFAULT_OPTIONS)
    for port in svc["spec"]["ports"]:
        port["targetPort"] = port["port"]
    return pods, [svc]


def test_ready_cluster_status() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    pods, services = _world(cluster)
    status = status_of(cluster, pods, services, now=T0)
    assert status["state"] == "ready"
    assert status["readyWorkerReplicas"] == 1 and status["availableWorkerReplicas"] == 1
    assert status["desiredWorkerReplicas"] == 1
    assert status["minWorkerReplicas"] == 1 and status["maxWorkerReplicas"] == 5
    assert status["desiredCPU"] == "2" and status["desiredMemory"] == "6Gi"
    assert status["desiredGPU"] == "0" and status["desiredTPU"] == "0"
    assert status["head"] == {
        "podIP": "10.0.0.1",
        "podName": "h",
        "serviceIP": "10.0.0.1",
        "serviceName": "raycluster-kuberay-head-svc",
    }
    assert status["endpoints"] == {
        "client": "10001",
        "dashboard": "8265",
        "gcs-server": "6379",
        "metrics": "8080",
    }
    assert status["observedGeneration"] == 1 and status["lastUpdateTime"] == T0
    assert status["stateTransitionTimes"] == {"ready": T0}
    conds = {c["type"]: c for c in status["conditions"]}
    assert [c["type"] for c in status["conditions"]] == [
        "HeadPodReady",
        "RayClusterProvisioned",
        "RayClusterSuspended",
        "RayClusterSuspending",
    ]
    assert (
        conds["HeadPodReady"]["status"] == "True"
        and conds["HeadPodReady"]["reason"] == "HeadPodRunningAndReady"
    )
    assert conds["RayClusterProvisioned"]["reason"] == "AllPodRunningAndReadyFirstTime"
    assert conds["RayClusterSuspended"] == {
        "type": "RayClusterSuspended",
        "status": "False",
        "lastTransitionTime": T0,
        "reason": "RayClusterSuspended",
        "message": "",
    }


def test_state_is_sticky_and_provisioned_frozen() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    pods, services = _world(cluster)
    cluster["status"] = status_of(cluster, pods, services, now=T0)
    pods[1]["status"]["phase"] = "Pending"
    status = status_of(cluster, pods, services, now=T1)
    assert status["state"] == "ready"
    assert "readyWorkerReplicas" not in status and "availableWorkerReplicas" not in status
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["RayClusterProvisioned"]["status"] == "True"
    assert conds["RayClusterProvisioned"]["lastTransitionTime"] == T0
    assert status_changed(cluster["status"], status)


def test_head_not_ready_reason_from_container() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    pods, services = _world(cluster, ready=False)
    status = status_of(cluster, pods, services, now=T0)
    head_ready = next(c for c in status["conditions"] if c["type"] == "HeadPodReady")
    assert head_ready["status"] == "False"
    assert head_ready["reason"] == "CrashLoopBackOff"
    assert head_ready["message"] == "not ready; ray-head: boom"
    assert "state" not in status


def test_head_missing_and_service_missing() -> None:
    cluster = minimal_cluster()
    _, services = _world(cluster)
    status = status_of(cluster, [], services, now=T0)
    head_ready = next(c for c in status["conditions"] if c["type"] == "HeadPodReady")
    assert (head_ready["reason"], head_ready["message"]) == (
        "HeadPodNotFound",
        "Head Pod not found",
    )
    assert status["head"] == {"serviceName": "rc-head-svc"}
    with pytest.raises(StatusUnavailableError, match="unable to find head service"):
        status_of(cluster, [], [], now=T0)
    services[0]["spec"].pop("clusterIP")
    with pytest.raises(StatusUnavailableError, match="IP is empty"):
        status_of(cluster, [], services, now=T0)


def test_cluster_ip_service_ip() -> None:
    cluster = minimal_cluster()
    pods, services = _world(cluster)
    services[0]["spec"]["clusterIP"] = "10.96.0.10"
    assert status_of(cluster, pods, services, now=T0)["head"]["serviceIP"] == "10.96.0.10"


def test_replica_failure_condition_set_and_removed() -> None:
    cluster = minimal_cluster()
    pods, services = _world(cluster)
    error = ReplicaFailureError("FailedCreateWorkerPod", "quota exceeded")
    status = status_of(cluster, pods, services, now=T0, reconcile_error=error)
    failure = status["conditions"][0]
    assert (failure["type"], failure["reason"], failure["message"]) == (
        "ReplicaFailure",
        "FailedCreateWorkerPod",
        "quota exceeded",
    )
    assert "state" not in status  # no ready state on a reconcile error
    cluster["status"] = status
    status = status_of(cluster, pods, services, now=T1)
    assert all(c["type"] != "ReplicaFailure" for c in status["conditions"])


def test_suspend_flow() -> None:
    cluster = minimal_cluster(suspend=True)
    pods, services = _world(cluster)
    cluster["status"] = status_of(cluster, pods, services, now=T0)
    conds = {c["type"]: c["status"] for c in cluster["status"]["conditions"]}
    assert conds["RayClusterSuspending"] == "True" and conds["RayClusterSuspended"] == "False"
    cluster["status"] = status_of(cluster, [], services, now=T1)
    conds = {c["type"]: c for c in cluster["status"]["conditions"]}
    assert conds["RayClusterSuspending"]["status"] == "False"
    assert conds["RayClusterSuspended"]["status"] == "True"
    assert conds["RayClusterProvisioned"]["message"] == "RayCluster has been suspended"
    assert cluster["status"]["state"] == "suspended"
    cluster["spec"]["suspend"] = False
    status = status_of(cluster, [], services, now=T1)
    assert {c["type"]: c["status"] for c in status["conditions"]}["RayClusterSuspended"] == "False"


def test_counters_multi_host_suspended_groups_and_gpu() -> None:
    cluster = minimal_cluster()
    groups = cluster["spec"]["workerGroupSpecs"]
    groups[0].update(replicas=9, numOfHosts=2)  # clamped to max 5
    groups[0]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "1"}
    }
    groups.append(
        {
            "groupName": "s",
            "replicas": 1,
            "minReplicas": 1,
            "suspend": True,
            "template": {"spec": {"containers": [{"name": "w"}]}},
        }
    )
    _, services = _world(minimal_cluster())
    status = status_of(cluster, [], services, now=T0)
    assert status["desiredWorkerReplicas"] == 10
    assert "minWorkerReplicas" not in status
    assert status["maxWorkerReplicas"] == 10
    assert status["desiredGPU"] == "18"  # raw replicas (9) x 2 hosts, as KubeRay sums them


def test_status_changed_ignores_timestamps_and_resources() -> None:
    cluster = load_sample("ray-cluster.sample.yaml")
    pods, services = _world(cluster)
    first = status_of(cluster, pods, services, now=T0)
    cluster["status"] = first
    second = status_of(cluster, pods, services, now=T1)
    assert second["lastUpdateTime"] == T1
    assert not status_changed(first, second)
    second["desiredCPU"] = "100"
    second["observedGeneration"] = 7
    assert not status_changed(first, second)
    assert status_changed(None, second)
    assert not status_changed({"endpoints": {}}, {"head": {}})
