"""The ray.io/serve label of head pods follows the Serve proxy's health check."""

from __future__ import annotations

from rayop.controllers.rayservice import head_label

from .rayservice_fakes import World, cluster_of, head_pod, rayservice, with_status


def _labels(world: World) -> list[tuple[str, str]]:
    return [
        (c.name, c.body["metadata"]["labels"]["ray.io/serve"]) for c in world.client.calls_of("patch")
    ]


async def test_a_healthy_proxy_labels_the_head_true_and_an_unhealthy_one_false() -> None:
    service = with_status(rayservice(), active="svc-a", pending="svc-b")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.add_cluster(cluster_of(service, "svc-b"))
    world.dashboards.of("svc-b").healthy = False
    assert await head_label.update_head_serve_labels(world.context(service)) is None
    assert _labels(world) == [("svc-a-head", "true"), ("svc-b-head", "false")]
    assert ("svc-a-head-svc", "serve") in world.dashboards.opened


async def test_an_unready_or_excluded_head_is_false_without_a_health_check() -> None:
    excluded = with_status(rayservice(excludeHeadPodFromServeSvc=True), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(excluded, "svc-a"))
    await head_label.update_head_serve_labels(world.context(excluded))
    assert _labels(world) == [("svc-a-head", "false")] and world.dashboards.opened == []

    unready = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(unready, "svc-a"), head_ready=False)
    await head_label.update_head_serve_labels(world.context(unready))
    assert _labels(world) == [("svc-a-head", "false")] and world.dashboards.opened == []


async def test_a_label_already_right_is_not_written() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"), head_ready=None)
    world.pods.put(head_pod("svc-a", serve="true"))
    await head_label.update_head_serve_labels(world.context(service))
    assert world.client.calls == []


async def test_no_cluster_or_no_head_pod_is_skipped() -> None:
    service = with_status(rayservice(), active="svc-missing", pending="svc-b")
    world = World()
    world.add_cluster(cluster_of(service, "svc-b"), head_ready=None)
    await head_label.update_head_serve_labels(world.context(service))
    assert world.client.calls == []
