"""Deploying serveConfigV2 to the target cluster and reading applications back."""

from __future__ import annotations

import base64

import pytest

from rayop.controllers.dashboard.errors import DashboardError
from rayop.controllers.rayservice import serve_config
from rayop.kube.resources import SECRETS

from .rayservice_fakes import NAME, NS, SERVE_CONFIG, World, cluster_of, rayservice, with_status


async def test_the_config_is_deployed_once_and_the_cluster_becomes_ready() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    ctx = world.context(service)
    assert await serve_config.reconcile_serve(ctx) is None
    serve = world.dashboards.of("svc-a")
    assert serve.puts == [{"applications": [{"name": "app", "import_path": "m:app"}]}]
    assert ctx.apps == {"svc-a": {"app": {"status": "RUNNING"}}}
    assert ctx.ready_clusters == {"svc-a"}
    assert world.serve_cache.get(NS, NAME, "svc-a") == SERVE_CONFIG
    assert world.recorder.reasons() == ["UpdatedServeApplications"]

    ctx = world.context(service)
    await serve_config.reconcile_serve(ctx)
    assert len(serve.puts) == 1 and ctx.ready_clusters == {"svc-a"}


async def test_lost_applications_are_deployed_again() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.serve_cache.put(NS, NAME, "svc-a", SERVE_CONFIG)
    await serve_config.reconcile_serve(world.context(service))
    assert len(world.dashboards.of("svc-a").puts) == 1


async def test_during_an_upgrade_the_pending_cluster_is_deployed_and_the_active_only_read() -> None:
    service = with_status(rayservice(), active="svc-a", pending="svc-b")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.add_cluster(cluster_of(service, "svc-b"))
    world.dashboards.of("svc-a").apps = {"app": "RUNNING"}
    world.dashboards.of("svc-b").status_after_put = "DEPLOYING"
    world.serve_cache.put(NS, NAME, "svc-old", SERVE_CONFIG)
    ctx = world.context(service)
    await serve_config.reconcile_serve(ctx)
    assert world.dashboards.of("svc-a").puts == [] and len(world.dashboards.of("svc-b").puts) == 1
    assert ctx.apps["svc-b"] == {"app": {"status": "DEPLOYING"}}
    assert ctx.ready_clusters == {"svc-a"}
    assert world.serve_cache.get(NS, NAME, "svc-old") is None


async def test_a_head_not_ready_is_not_contacted() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"), head_ready=False)
    ctx = world.context(service)
    await serve_config.reconcile_serve(ctx)
    assert ctx.apps == {"svc-a": {}} and world.dashboards.opened == []


async def test_a_refused_config_is_reported_and_raised() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.dashboards.of("svc-a").put_status = 500
    with pytest.raises(DashboardError):
        await serve_config.reconcile_serve(world.context(service))
    assert world.recorder.reasons() == ["FailedToUpdateServeApplications"]
    assert world.serve_cache.get(NS, NAME, "svc-a") is None


async def test_a_token_auth_cluster_is_called_with_its_token_from_the_auth_secret() -> None:
    service = rayservice()
    service["spec"]["rayClusterConfig"]["authOptions"] = {"mode": "token"}
    service = with_status(service, active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    secret = {
        "metadata": {"name": "svc-a", "namespace": NS},
        "data": {"auth_token": base64.b64encode(b"s3cret").decode()},
    }
    world.secrets.put(secret)
    await serve_config.reconcile_serve(world.context(service))
    assert world.dashboards.tokens == ["s3cret"]
    assert len(world.dashboards.of("svc-a").puts) == 1


async def test_a_token_secret_not_cached_yet_is_read_from_the_api() -> None:
    service = rayservice()
    service["spec"]["rayClusterConfig"]["authOptions"] = {"mode": "token", "secretName": "tok"}
    service = with_status(service, active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    secret = {"metadata": {"name": "tok", "namespace": NS}, "data": {"auth_token": "dG9r"}}
    world.client.put(SECRETS, secret)
    await serve_config.reconcile_serve(world.context(service))
    assert world.dashboards.tokens == ["tok"]
