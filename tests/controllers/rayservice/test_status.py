"""RayService status folding: promotion, endpoints, conditions, and what counts as a change."""

from __future__ import annotations

from typing import Any

from rayop.controllers.dashboard.models import ServeApplicationDetails, ServeDeploymentDetails
from rayop.controllers.rayservice import status as st

from .rayservice_fakes import NS, World, cluster_of, rayservice, with_status

NOW = "2025-01-01T00:00:00Z"


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_promotion_happens_only_when_services_select_the_pending_cluster() -> None:
    status = {
        "activeServiceStatus": {"rayClusterName": "old"},
        "pendingServiceStatus": {"rayClusterName": "new"},
    }
    assert not st.promote(status, "old")
    assert status["pendingServiceStatus"]["rayClusterName"] == "new"
    assert st.promote(status, "new")
    assert status["activeServiceStatus"]["rayClusterName"] == "new"
    assert status["pendingServiceStatus"] == {}


def test_endpoints_count_distinct_ready_pods_across_slices() -> None:
    slices: list[dict[str, Any]] = [
        {
            "endpoints": [
                {"targetRef": {"uid": "a"}, "conditions": {"ready": True}},
                {"targetRef": {"uid": "b"}, "conditions": {"ready": False}},
                {"targetRef": {"uid": "c"}},
            ]
        },
        {"endpoints": [{"targetRef": {"uid": "a"}, "conditions": {"ready": True}}]},
    ]
    assert st.count_ready_endpoints(slices) == 2
    assert st.count_ready_endpoints([]) == 0


def test_ready_condition_sequence() -> None:
    status: dict[str, Any] = {"numServeEndpoints": 0}
    st.set_conditions(status, generation=1, now=NOW)
    assert _conditions(status)["Ready"] == ("False", "Initializing")
    assert _conditions(status)["UpgradeInProgress"] == ("False", "Initializing")
    status.update(numServeEndpoints=2, activeServiceStatus={"rayClusterName": "a"})
    st.set_conditions(status, generation=1, now=NOW)
    assert _conditions(status)["Ready"] == ("True", "NonZeroServeEndpoints")
    assert status["serviceStatus"] == "Running"
    assert _conditions(status)["UpgradeInProgress"] == ("False", "NoPendingCluster")
    status.update(numServeEndpoints=0, pendingServiceStatus={"rayClusterName": "b"})
    st.set_conditions(status, generation=2, now=NOW)
    assert _conditions(status)["Ready"] == ("False", "ZeroServeEndpoints")
    assert status["serviceStatus"] == ""
    assert _conditions(status)["UpgradeInProgress"] == ("True", "BothActivePendingClustersExist")


def test_conditions_keep_what_kuberay_keeps() -> None:
    """With no endpoints Ready stays as it is; with no active cluster UpgradeInProgress keeps
    Initializing but is Unknown after a cluster was lost."""
    status: dict[str, Any] = {"numServeEndpoints": 0}
    st.set_conditions(status, generation=1, now=NOW)
    st.set_conditions(status, generation=1, now=NOW)
    assert _conditions(status)["Ready"] == ("False", "Initializing")
    status.update(activeServiceStatus={"rayClusterName": "a"})
    st.set_conditions(status, generation=1, now=NOW)
    status.update(activeServiceStatus={})
    st.set_conditions(status, generation=1, now=NOW)
    assert _conditions(status)["UpgradeInProgress"] == ("Unknown", "NoActiveCluster")


def test_application_statuses_use_wire_names_and_default_for_unnamed() -> None:
    apps = {
        "": ServeApplicationDetails(
            name="",
            status="DEPLOY_FAILED",
            message="boom",
            deployments={"D": ServeDeploymentDetails(name="D", status="UNHEALTHY", message="x")},
        ),
        "ok": ServeApplicationDetails(name="ok", status="RUNNING"),
    }
    assert st.application_statuses(apps) == {
        "default": {
            "status": "DEPLOY_FAILED",
            "message": "boom",
            "serveDeploymentStatuses": {"D": {"status": "UNHEALTHY", "message": "x"}},
        },
        "ok": {"status": "RUNNING"},
    }


def test_cluster_status_and_update_time_alone_are_not_a_change() -> None:
    old: dict[str, Any] = {
        "lastUpdateTime": "a",
        "activeServiceStatus": {"rayClusterName": "c", "rayClusterStatus": {"state": "x"}},
    }
    new: dict[str, Any] = {
        "lastUpdateTime": "b",
        "activeServiceStatus": {"rayClusterName": "c", "rayClusterStatus": {"state": "y"}},
    }
    assert not st.status_changed(old, new)
    new["activeServiceStatus"]["applicationStatuses"] = {"a": {"status": "RUNNING"}}
    assert st.status_changed(old, new)


def _slice(*uids: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "svc-serve-svc-abc",
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": "svc-serve-svc"},
        },
        "endpoints": [{"targetRef": {"uid": u}, "conditions": {"ready": True}} for u in uids],
    }


async def test_finishing_promotes_counts_endpoints_and_writes_once() -> None:
    service = with_status(rayservice(), active="svc-a", pending="svc-b")
    world = World()
    cluster = cluster_of(service, "svc-b")
    cluster["status"] = {"state": "ready"}
    world.add_cluster(cluster)
    world.endpoint_slices.put(_slice("p1", "p2"))
    ctx = world.context(service)
    ctx.serving_cluster = "svc-b"
    ctx.apps["svc-b"] = {"app": {"status": "RUNNING"}}
    await st.finish_status(ctx)
    [write] = world.client.calls_of("update/status")
    status = write.body["status"]
    assert status["activeServiceStatus"] == {
        "rayClusterName": "svc-b",
        "applicationStatuses": {"app": {"status": "RUNNING"}},
        "rayClusterStatus": {"state": "ready"},
    }
    assert status["pendingServiceStatus"] == {} and status["numServeEndpoints"] == 2
    assert status["serviceStatus"] == "Running" and status["observedGeneration"] == 1
    assert status["lastUpdateTime"] == "2026-01-01T00:16:40Z"
    assert world.own_writes.cache_behind(world.rayservices.get(NS, "svc") or {})

    again = world.context(dict(ctx.cached))
    again.serving_cluster = "svc-b"
    again.apps["svc-b"] = {"app": {"status": "RUNNING"}}
    world.clock.step(5)
    await st.finish_status(again)
    assert len(world.client.calls_of("update/status")) == 1, "an unchanged status was written"
