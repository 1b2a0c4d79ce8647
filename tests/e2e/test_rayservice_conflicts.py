"""A converging RayService never sends a write bound to fail with 409 on its own last write.

Every status write of a pass is followed at once by cluster and service events that enqueue the
RayService again, usually before the RayService cache has shown that write. The own-writes
tracker makes such a pass wait for the cache; without it, the pass would write (or patch the
finalizer) over the stale copy and fail with 409, logged as a reconciler error.
"""

from __future__ import annotations

import logging

import pytest

from rayop.testing import eventually

from .rayservice_env import RayServiceEnv, running_rayservice_operator, small_rayservice

NS = "conflicts"
NAME = "svc"
NEW_HEAD_PARAMS = {"rayClusterConfig": {"headGroupSpec": {"rayStartParams": {"num-cpus": "0"}}}}


def _rayservice_writes(env: RayServiceEnv) -> list[tuple[str, str, int]]:
    """Returns (verb, subresource, code) of every write to the RayService, in order."""
    return [
        (w.verb, w.subresource, w.code)
        for w in env.cp.audit.writes
        if w.resource == "rayservices" and w.namespace == NS and w.name == NAME
    ]


async def test_creation_and_upgrade_send_no_conflicting_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    async with running_rayservice_operator() as env:
        await env.create(small_rayservice(NAME, delay=0), NS)
        await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready")
        first = env.cluster_name(NS, NAME)
        await env.patch_spec(NS, NAME, NEW_HEAD_PARAMS)
        await eventually(
            lambda: env.cluster_name(NS, NAME) not in ("", first) and env.is_ready(NS, NAME),
            timeout=15,
            what="Ready on the new cluster",
        )
        writes = _rayservice_writes(env)
        status_writes = [w for w in writes if w[1] == "status"]
        assert len(status_writes) >= 4, writes
        assert [w for w in writes if w[2] == 409] == []
    errors = [r for r in caplog.records if "Reconciler error" in r.getMessage()]
    assert errors == []
