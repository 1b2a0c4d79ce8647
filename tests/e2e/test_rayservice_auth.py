"""RayService with Ray token auth: the dashboard the plane runs refuses calls without the token,
so the RayService reaches Ready only if its dashboard client sends it (as the RayJob's does)."""

from __future__ import annotations

from rayop.testing import eventually

from .rayservice_env import RayServiceEnv, running_rayservice_operator, small_rayservice

NS = "auth"
NAME = "svc"


async def test_a_token_auth_rayservice_deploys_its_apps_through_the_token() -> None:
    async with running_rayservice_operator() as env:
        service = small_rayservice(NAME)
        service["spec"]["rayClusterConfig"]["authOptions"] = {"mode": "token"}
        await env.create(service, NS)
        await eventually(lambda: _ready(env), timeout=15, what="Ready with token auth")
        dash = env.cp.dashboards.for_cluster(NS, env.cluster_name(NS, NAME))
        assert dash is not None and dash.token, "the simulated head requires a token"
        assert env.app_statuses(NS, NAME) == {"app0": "RUNNING"}


def _ready(env: RayServiceEnv) -> bool:
    return env.is_ready(NS, NAME)
