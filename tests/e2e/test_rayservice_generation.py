"""Generation and observedGeneration after the RayService finalizer, as KubeRay v1.7.0 has them.

KubeRay adds ``ray.io/rayservice-finalizer`` with a typed update that writes the spec back as
Go encodes it; a spec applied without a pod template's ``metadata``, a container's
``resources`` or a worker group's ``scaleStrategy`` comes back with ``{}`` there, so the API
server bumps the generation to 2 and ``observedGeneration`` follows (KubeRay's own e2e test of
the initializing timeout expects 2). A spec already in that form stays at generation 1.
"""

from __future__ import annotations

import copy

from rayop.testing import eventually

from .rayservice_env import RayServiceEnv, running_rayservice_operator, small_rayservice

NS = "gen"


def _generations(env: RayServiceEnv, name: str) -> tuple[int, int]:
    service = env.rayservice(NS, name)
    observed = (service.get("status") or {}).get("observedGeneration") or 0
    return int(service["metadata"]["generation"]), int(observed)


async def test_the_finalizer_update_bumps_the_generation_of_a_spec_go_rewrites() -> None:
    async with running_rayservice_operator() as env:
        await env.create(small_rayservice("applied"), NS)
        await eventually(lambda: env.is_ready(NS, "applied"), timeout=15, what="Ready")
        await eventually(
            lambda: _generations(env, "applied") == (2, 2), timeout=10, what="generation 2"
        )
        stored = env.rayservice(NS, "applied")
        template = stored["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]
        assert template["metadata"] == {}
        assert template["spec"]["containers"][0]["resources"] == {}

        go_shaped = {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": {"name": "go-shaped"},
            "spec": copy.deepcopy(stored["spec"]),
        }
        await env.create(go_shaped, NS)
        await eventually(lambda: env.is_ready(NS, "go-shaped"), timeout=15, what="Ready")
        assert (
            "ray.io/rayservice-finalizer"
            in env.rayservice(NS, "go-shaped")["metadata"]["finalizers"]
        )
        assert _generations(env, "go-shaped") == (1, 1)
