"""The RayCluster validate step words its events as KubeRay's controller does."""

from __future__ import annotations

from rayop.controllers.raycluster import reconcile_steps as steps

from ._fakes import NS, Fakes, context
from ._fixtures import minimal_cluster


async def test_the_event_names_the_cluster_and_the_status_reason_keeps_the_message() -> None:
    fakes = Fakes()
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    await steps.validate(context(cluster, fakes))
    (event,) = fakes.events.recorded
    name = cluster["metadata"]["name"]
    group = cluster["spec"]["workerGroupSpecs"][0]["groupName"]
    message = f"worker group {group} has minReplicas 9 greater than maxReplicas 5"
    assert (event.type, event.reason, event.action) == (
        "Warning",
        "InvalidRayClusterSpec",
        "Validate",
    )
    assert event.note == f"The RayCluster spec is invalid {NS}/{name}: {message}"
    (write,) = fakes.api.calls_of("update/status")
    assert write.body["status"]["reason"] == f"InvalidRayClusterSpec: {message}"


async def test_a_bad_name_is_invalid_raycluster_metadata() -> None:
    fakes = Fakes()
    cluster = minimal_cluster()
    cluster["metadata"]["name"] = "Bad_Name"
    await steps.validate(context(cluster, fakes))
    (event,) = fakes.events.recorded
    assert event.reason == "InvalidRayClusterMetadata"
    assert event.note.startswith(
        f"The RayCluster metadata is invalid {NS}/Bad_Name: RayCluster name should be a valid "
        "DNS1035 label: [a DNS-1035 label must consist"
    )


async def test_autoscaler_v1_worker_restart_policy_is_a_warning_not_a_refusal() -> None:
    fakes = Fakes()
    cluster = minimal_cluster(enableInTreeAutoscaling=True, autoscalerOptions={"version": "v1"})
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["template"]["spec"]["restartPolicy"] = "Always"
    assert await steps.validate(context(cluster, fakes)) is None
    (event,) = fakes.events.recorded
    name = cluster["metadata"]["name"]
    assert (event.type, event.reason) == ("Warning", "InvalidRayClusterSpec")
    assert event.note == (
        f"RayCluster spec warning {NS}/{name}: restartPolicy for worker groups "
        f"[{group['groupName']}] should be Never or unset when using autoscaler V1"
    )
    assert fakes.api.calls_of("update/status") == []
