"""Pointing the head and serve Services at the cluster that is ready."""

from __future__ import annotations

from rayop.controllers.rayservice import services
from rayop.kube.resources import SERVICES

from .rayservice_fakes import NS, World, cluster_of, rayservice, with_status


def _service_selecting(name: str, cluster: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "3"},
        "spec": {
            "clusterIP": "10.0.0.7",
            "selector": {"ray.io/cluster": cluster, "ray.io/serve": "true"},
            "ports": [{"name": "serve", "port": 8000}],
        },
    }


async def test_nothing_is_created_while_no_cluster_is_ready() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    ctx = world.context(service)
    assert await services.reconcile_services(ctx) is None
    assert world.client.calls == [] and ctx.serving_cluster == ""


async def test_the_ready_cluster_gets_both_services() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    ctx = world.context(service)
    ctx.ready_clusters.add("svc-a")
    await services.reconcile_services(ctx)
    created = {c.name: c.body for c in world.client.calls_of("create", "Service")}
    assert sorted(created) == ["svc-head-svc", "svc-serve-svc"]
    assert created["svc-serve-svc"]["spec"]["selector"] == {
        "ray.io/cluster": "svc-a",
        "ray.io/serve": "true",
    }
    assert ctx.serving_cluster == "svc-a"
    assert world.recorder.reasons() == ["CreatedService", "CreatedService"]


async def test_a_ready_pending_cluster_takes_the_services_over() -> None:
    service = with_status(rayservice(), active="svc-a", pending="svc-b")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.add_cluster(cluster_of(service, "svc-b"))
    world.services.put(
        _service_selecting("svc-serve-svc", "svc-a"), _service_selecting("svc-head-svc", "svc-a")
    )
    ctx = world.context(service)
    ctx.ready_clusters.update({"svc-a", "svc-b"})
    await services.reconcile_services(ctx)
    updates = {c.name: c.body for c in world.client.calls_of("update", "Service")}
    assert sorted(updates) == ["svc-head-svc", "svc-serve-svc"]
    serve = updates["svc-serve-svc"]
    assert serve["spec"]["selector"]["ray.io/cluster"] == "svc-b"
    assert serve["spec"]["clusterIP"] == "10.0.0.7"
    assert ctx.serving_cluster == "svc-b"
    assert world.recorder.reasons() == ["UpdatedService", "UpdatedService"]


async def test_services_already_on_the_target_are_left_alone() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.services.put(
        _service_selecting("svc-serve-svc", "svc-a"), _service_selecting("svc-head-svc", "svc-a")
    )
    ctx = world.context(service)
    ctx.ready_clusters.add("svc-a")
    await services.reconcile_services(ctx)
    assert world.client.calls == [] and ctx.serving_cluster == "svc-a"


async def test_a_service_created_meanwhile_is_read_and_retargeted() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    for name in ("svc-serve-svc", "svc-head-svc"):
        world.client.put(SERVICES, _service_selecting(name, "svc-x"))
    ctx = world.context(service)
    ctx.ready_clusters.add("svc-a")
    await services.reconcile_services(ctx)
    assert [c.verb for c in world.client.calls] == ["create", "get", "update"] * 2
