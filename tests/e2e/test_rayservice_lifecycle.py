"""RayService life cycle: serve-config updates in place, suspend and resume, deletion, validation."""

from __future__ import annotations

import yaml

from rayop.kube.resources import RAY_CLUSTERS, RAY_SERVICES, SERVICES
from rayop.testing import eventually

from .rayservice_env import RayServiceEnv, running_rayservice_operator, small_rayservice

NS = "life"
NAME = "svc"


def _clusters(env: RayServiceEnv) -> list[str]:
    return sorted(c["metadata"]["name"] for c in env.objects(RAY_CLUSTERS, NS))


def _conflicts(env: RayServiceEnv) -> list[tuple[str, str]]:
    """Returns (verb, subresource) of every RayService write that failed with 409."""
    return [
        (w.verb, w.subresource)
        for w in env.cp.audit.writes
        if w.resource == "rayservices" and w.namespace == NS and w.code == 409
    ]


async def test_serve_config_change_updates_the_active_cluster_in_place() -> None:
    async with running_rayservice_operator() as env:
        await env.create(small_rayservice(NAME, apps=1), NS)
        await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready")
        active = env.cluster_name(NS, NAME)
        dash = env.cp.dashboards.for_cluster(NS, active)
        assert dash is not None
        puts = dash.serve.puts
        apps = [
            {"name": f"app{i}", "import_path": f"mod{i}:app", "route_prefix": f"/app{i}"}
            for i in range(2)
        ]
        await env.patch_spec(NS, NAME, {"serveConfigV2": yaml.safe_dump({"applications": apps})})
        await eventually(
            lambda: env.app_statuses(NS, NAME) == {"app0": "RUNNING", "app1": "RUNNING"},
            timeout=10,
            what="new app RUNNING",
        )
        assert env.cluster_name(NS, NAME) == active and _clusters(env) == [active]
        assert not env.cluster_name(NS, NAME, "pending")
        assert dash.serve.puts == puts + 1
        assert sorted(dash.serve.apps) == ["app0", "app1"]
        assert env.is_ready(NS, NAME)


async def test_suspend_deletes_clusters_and_services_and_resume_serves_again() -> None:
    async with running_rayservice_operator() as env:
        await env.create(small_rayservice(NAME), NS)
        await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready")
        first = env.cluster_name(NS, NAME)
        await env.patch_spec(NS, NAME, {"suspend": True})
        await eventually(
            lambda: env.condition(NS, NAME, "Suspended")[0] == "True", timeout=10, what="Suspended"
        )
        assert _clusters(env) == []
        assert env.stored(SERVICES, NS, f"{NAME}-serve-svc") is None
        assert env.stored(SERVICES, NS, f"{NAME}-head-svc") is None
        assert env.condition(NS, NAME, "Ready")[0] == "False"
        assert env.condition(NS, NAME, "Suspending")[0] == "False"
        assert not env.cluster_name(NS, NAME) and env.status(NS, NAME).get("serviceStatus") == ""

        await env.patch_spec(NS, NAME, {"suspend": False})
        await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready after resume")
        assert env.condition(NS, NAME, "Suspended") == ("False", "RayServiceResumed")
        assert env.cluster_name(NS, NAME) not in ("", first)
        assert _conflicts(env) == []


async def test_deleting_the_rayservice_deletes_its_clusters() -> None:
    async with running_rayservice_operator() as env:
        await env.create(small_rayservice(NAME), NS)
        await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready")
        assert "ray.io/rayservice-finalizer" in env.rayservice(NS, NAME)["metadata"]["finalizers"]
        await env.client.delete(RAY_SERVICES, NAME, namespace=NS)
        await eventually(
            lambda: env.stored(RAY_SERVICES, NS, NAME) is None and not _clusters(env),
            timeout=10,
            what="RayService and clusters gone",
        )
        assert _conflicts(env) == []


async def test_invalid_rayservice_reports_validation_failed() -> None:
    async with running_rayservice_operator() as env:
        bad = small_rayservice(NAME)
        bad["spec"]["upgradeStrategy"] = {"type": "Sideways"}
        await env.create(bad, NS)
        await eventually(
            lambda: env.condition(NS, NAME, "Ready") == ("False", "ValidationFailed"),
            timeout=10,
            what="ValidationFailed",
        )
        assert _clusters(env) == []


async def test_a_cluster_it_did_not_create_is_never_retired_even_with_its_labels() -> None:
    async with running_rayservice_operator() as env:
        await env.namespace(NS)
        stray = {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": "someone-elses",
                "labels": {
                    "ray.io/originated-from-cr-name": NAME,
                    "ray.io/originated-from-crd": "RayService",
                },
            },
            "spec": small_rayservice(NAME)["spec"]["rayClusterConfig"],
        }
        await env.client.create(RAY_CLUSTERS, stray, namespace=NS)
        # Created before the RayService, the stray is in the cluster cache before the
        # RayService's own cluster, so every pass that sees that cluster ready has seen it too.
        await env.create(small_rayservice(NAME, delay=0), NS)
        await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready")
        kept = env.stored(RAY_CLUSTERS, NS, "someone-elses")
        assert kept is not None and not kept["metadata"].get("deletionTimestamp")
        assert "ray.io/rayservice-deletion-timestamp" not in env.annotations(
            RAY_CLUSTERS, NS, "someone-elses"
        )
