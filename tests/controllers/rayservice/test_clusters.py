"""Choosing, recording, creating and updating the active and pending clusters."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.gocompat.spec_hash import rayservice_cluster_hash
from rayop.controllers.rayservice import clusters
from rayop.kube.errors import Conflict
from rayop.kube.resources import RAY_CLUSTERS

from .rayservice_fakes import NS, World, cluster_of, rayservice, with_status

HASH = "ray.io/hash-without-replicas-and-workers-to-delete"


def _new_head_params(service: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(service)
    changed["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    return changed


async def test_a_new_service_records_its_pending_cluster_before_creating_it() -> None:
    world = World()
    ctx = world.context(rayservice())
    assert await clusters.plan_clusters(ctx) is None
    pending = ctx.pending_name
    assert pending.startswith("svc-") and len(pending) == 9
    assert [c.verb for c in world.client.calls] == ["update/status"]
    assert world.own_writes.cache_behind(world.rayservices.get(NS, "svc") or {})

    assert await clusters.ensure_clusters(ctx) is None
    [create] = world.client.calls_of("create", "RayCluster")
    assert create.name == pending
    assert create.body["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"
    assert world.recorder.reasons() == ["CreatedRayCluster"]


async def test_a_lost_status_write_creates_nothing() -> None:
    world = World()
    world.client.fail_next("update/status", Conflict({"code": 409, "reason": "Conflict"}))
    ctx = world.context(rayservice())
    try:
        await clusters.plan_clusters(ctx)
    except Conflict:
        pass
    else:
        raise AssertionError("the Conflict was swallowed")
    assert world.client.calls_of("create") == []


async def test_a_spec_change_prepares_a_new_cluster_only_with_zero_downtime() -> None:
    old = rayservice()
    changed = with_status(_new_head_params(old), active="svc-old")
    world = World()
    world.add_cluster(cluster_of(old, "svc-old"))
    ctx = world.context(changed)
    await clusters.plan_clusters(ctx)
    assert ctx.pending_name not in ("", "svc-old")

    world = World(options=OperatorOptions(enable_zero_downtime=False))
    world.add_cluster(cluster_of(old, "svc-old"))
    ctx = world.context(changed)
    await clusters.plan_clusters(ctx)
    assert ctx.pending_name == "" and world.client.calls == []


async def test_appended_worker_groups_update_the_active_cluster_in_place() -> None:
    old = rayservice()
    grown = copy.deepcopy(old)
    extra = copy.deepcopy(grown["spec"]["rayClusterConfig"]["workerGroupSpecs"][0])
    extra["groupName"] = "extra"
    grown["spec"]["rayClusterConfig"]["workerGroupSpecs"].append(extra)
    world = World()
    world.add_cluster(cluster_of(old, "svc-old"))
    ctx = world.context(with_status(grown, active="svc-old"))
    await clusters.plan_clusters(ctx)
    assert ctx.pending_name == ""
    await clusters.ensure_clusters(ctx)
    [update] = world.client.calls_of("update", "RayCluster")
    groups = [g["groupName"] for g in update.body["spec"]["workerGroupSpecs"]]
    assert update.name == "svc-old" and groups == ["small", "extra"]
    [(_, reason, note)] = world.events()
    assert reason == "UpdatedRayCluster"
    assert note == f"Updated the active RayCluster {update.body['metadata']['namespace']}/svc-old"


async def test_going_back_to_the_active_spec_drops_the_pending_cluster() -> None:
    service = rayservice()
    world = World()
    world.add_cluster(cluster_of(service, "svc-old"))
    world.add_cluster(cluster_of(_new_head_params(service), "svc-new"))
    ctx = world.context(with_status(service, active="svc-old", pending="svc-new"))
    await clusters.plan_clusters(ctx)
    assert ctx.pending_name == "" and ctx.active_name == "svc-old"
    [write] = world.client.calls_of("update/status")
    assert write.body["status"]["pendingServiceStatus"] == {}


async def test_an_active_cluster_gone_from_the_server_is_forgotten() -> None:
    world = World()
    ctx = world.context(with_status(rayservice(), active="svc-gone"))
    await clusters.plan_clusters(ctx)
    assert [c.verb for c in world.client.calls[:1]] == ["get"]
    assert ctx.active_name == "" and ctx.pending_name.startswith("svc-")


async def test_an_active_cluster_missing_only_from_the_cache_is_kept() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.client.put(RAY_CLUSTERS, cluster_of(service, "svc-a"))
    ctx = world.context(service)
    await clusters.plan_clusters(ctx)
    assert ctx.active_name == "svc-a" and ctx.pending_name == ""
    assert world.client.calls_of("update/status") == []


async def test_a_pending_cluster_that_exists_already_is_not_an_error() -> None:
    service = with_status(rayservice(), pending="svc-p")
    world = World()
    world.client.put(RAY_CLUSTERS, cluster_of(service, "svc-p"))
    await clusters.ensure_clusters(world.context(service))
    assert len(world.client.calls_of("create")) == 1 and world.events() == []


def _edited(service: dict[str, Any], edit: str) -> dict[str, Any]:
    changed = copy.deepcopy(service)
    config = changed["spec"]["rayClusterConfig"]
    group = config["workerGroupSpecs"][0]
    gate = [{"name": "kueue.x-k8s.io/admission"}]
    if edit in ("minReplicas", "maxReplicas", "replicas"):
        group[edit] = 9
    elif edit == "tolerations":
        group["template"]["spec"]["tolerations"] = [{"key": "kueue", "operator": "Exists"}]
    elif edit == "schedulingGates":
        config["headGroupSpec"]["template"]["spec"]["schedulingGates"] = gate
    elif edit == "upgradeStrategy":
        config["upgradeStrategy"] = {"type": "Recreate"}
    else:
        config["suspend"] = True
    return changed


MUTED_EDITS = ["minReplicas", "maxReplicas", "replicas", "tolerations", "schedulingGates"]


@pytest.mark.parametrize("edit", [*MUTED_EDITS, "upgradeStrategy", "suspend"])
async def test_an_edit_of_a_muted_field_starts_no_upgrade(edit: str) -> None:
    old = rayservice()
    world = World()
    world.add_cluster(cluster_of(old, "svc-old"))
    ctx = world.context(with_status(_edited(old, edit), active="svc-old"))
    await clusters.plan_clusters(ctx)
    await clusters.ensure_clusters(ctx)
    assert ctx.pending_name == "" and world.client.calls == []


async def test_a_cluster_of_another_kuberay_version_is_updated_in_place() -> None:
    old = rayservice()
    cluster = cluster_of(old, "svc-old")
    annotations = cluster["metadata"]["annotations"]
    annotations.update({"ray.io/kuberay-version": "v1.6.0", HASH: "FROM-AN-OLDER-ALGORITHM"})
    world = World()
    world.add_cluster(cluster)
    ctx = world.context(with_status(_new_head_params(old), active="svc-old"))
    await clusters.plan_clusters(ctx)
    assert ctx.pending_name == "" and world.client.calls == []
    await clusters.ensure_clusters(ctx)
    [update] = world.client.calls_of("update", "RayCluster")
    written = update.body["metadata"]["annotations"]
    assert update.name == "svc-old" and written["ray.io/kuberay-version"] == "v1.7.0"
    goal = _new_head_params(old)["spec"]["rayClusterConfig"]
    assert written[HASH] == rayservice_cluster_hash(goal)
    assert update.body["spec"]["headGroupSpec"]["rayStartParams"] == {"num-cpus": "0"}
    assert world.recorder.reasons() == ["UpdatedRayCluster"]


async def test_during_an_upgrade_the_active_cluster_of_another_version_is_left_alone() -> None:
    old = rayservice()
    active = cluster_of(old, "svc-old")
    active["metadata"]["annotations"]["ray.io/kuberay-version"] = "v1.6.0"
    world = World()
    world.add_cluster(active)
    world.add_cluster(cluster_of(_new_head_params(old), "svc-new"))
    ctx = world.context(with_status(_new_head_params(old), active="svc-old", pending="svc-new"))
    await clusters.plan_clusters(ctx)
    await clusters.ensure_clusters(ctx)
    assert ctx.pending_name == "svc-new" and world.client.calls_of("update", "RayCluster") == []


async def test_a_cluster_without_a_worker_group_count_is_updated_in_place() -> None:
    old = rayservice()
    cluster = cluster_of(old, "svc-old")
    del cluster["metadata"]["annotations"]["ray.io/num-worker-groups"]
    world = World()
    world.add_cluster(cluster)
    ctx = world.context(with_status(_new_head_params(old), active="svc-old"))
    await clusters.plan_clusters(ctx)
    assert ctx.pending_name == ""
    await clusters.ensure_clusters(ctx)
    [update] = world.client.calls_of("update", "RayCluster")
    assert update.body["metadata"]["annotations"]["ray.io/num-worker-groups"] == "1"
