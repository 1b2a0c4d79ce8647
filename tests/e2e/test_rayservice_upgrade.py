"""Zero-downtime upgrades: a spec change prepares a new cluster, traffic moves only to RUNNING
applications, and the old cluster is deleted after the delay, even across an operator restart."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from rayop.controllers.rayservice.cleanup import scheduled_deletion
from rayop.controllers.rayservice.settings import DELETION_TIMESTAMP_ANNOTATION
from rayop.kube.resources import RAY_CLUSTERS
from rayop.sim.apiserver.audit import AuditRecord
from rayop.testing import eventually

from .rayservice_env import (
    RayServiceEnv,
    SelectorSampler,
    running_rayservice_operator,
    small_rayservice,
)

NS = "upgrade"
NAME = "svc"
SERVE = f"{NAME}-serve-svc"
HEAD = f"{NAME}-head-svc"
NEW_HEAD_PARAMS = {"rayClusterConfig": {"headGroupSpec": {"rayStartParams": {"num-cpus": "0"}}}}


def _hold_new_deployments(env: RayServiceEnv) -> None:
    """Dashboards created from now on (the next cluster's) keep applications DEPLOYING."""
    registry = env.cp.dashboards
    registry.config = dataclasses.replace(registry.config, serve_deploy_seconds=3600.0)


def _release(env: RayServiceEnv, cluster: str) -> None:
    """Lets the held cluster's applications become RUNNING now."""
    dash = env.cp.dashboards.for_cluster(NS, cluster)
    assert dash is not None
    dash.serve.deploy_seconds = 0.0
    for app in dash.serve.apps.values():
        app.forced_status = None


def _cluster_writes(env: RayServiceEnv, verb: str, cluster: str) -> list[AuditRecord]:
    """Returns the successful ``verb`` requests on the RayCluster ``cluster`` (not /status)."""
    return [
        w
        for w in env.cp.audit.writes
        if w.resource == "rayclusters"
        and w.verb == verb
        and w.name == cluster
        and not w.subresource
        and w.code < 300
    ]


def _has_apps(env: RayServiceEnv, cluster: str) -> bool:
    dash = env.cp.dashboards.for_cluster(NS, cluster)
    return dash is not None and bool(dash.serve.apps)


async def _ready_service(env: RayServiceEnv, *, delay: int) -> str:
    await env.create(small_rayservice(NAME, delay=delay), NS)
    await eventually(lambda: env.is_ready(NS, NAME), timeout=15, what="Ready")
    return env.cluster_name(NS, NAME)


async def test_spec_change_moves_traffic_only_to_running_apps_then_deletes_old() -> None:
    async with running_rayservice_operator() as env:
        await env.namespace(NS)
        async with SelectorSampler(env, NS, SERVE) as sampler:
            old = await _ready_service(env, delay=2)
            _hold_new_deployments(env)
            await env.patch_spec(NS, NAME, NEW_HEAD_PARAMS)
            await eventually(
                lambda: env.cluster_name(NS, NAME, "pending") not in ("", old), what="pending"
            )
            new = env.cluster_name(NS, NAME, "pending")
            await eventually(lambda: _has_apps(env, new), what="config deployed to new cluster")
            dash = env.cp.dashboards.for_cluster(NS, new)
            assert dash is not None
            dash.serve.force_status("app0", "DEPLOY_FAILED", "boom")
            await eventually(
                lambda: env.app_statuses(NS, NAME, "pending") == {"app0": "DEPLOY_FAILED"},
                what="DEPLOY_FAILED in pendingServiceStatus",
            )
            assert env.condition(NS, NAME, "UpgradeInProgress")[0] == "True"
            assert env.condition(NS, NAME, "Ready")[0] == "True"
            assert env.selected_cluster(NS, SERVE) == old == env.cluster_name(NS, NAME)
            assert env.selected_cluster(NS, HEAD) == old

            _release(env, new)
            await eventually(
                lambda: (
                    env.cluster_name(NS, NAME) == new and not env.cluster_name(NS, NAME, "pending")
                ),
                what="promotion",
            )
            assert env.selected_cluster(NS, SERVE) == new == env.selected_cluster(NS, HEAD)
            await eventually(
                lambda: DELETION_TIMESTAMP_ANNOTATION in env.annotations(RAY_CLUSTERS, NS, old),
                what="deletion scheduled",
            )
            await eventually(
                lambda: env.stored(RAY_CLUSTERS, NS, old) is None, timeout=10, what="old deleted"
            )
            # Server-side times of the schedule patch and the delete, not when the test saw them.
            [scheduled] = _cluster_writes(env, "patch", old)
            [deleted] = _cluster_writes(env, "delete", old)
            assert deleted.time - scheduled.time >= 2 - 0.05, "deleted before the delay"
            assert env.condition(NS, NAME, "UpgradeInProgress")[0] == "False"
            assert env.is_ready(NS, NAME)
        assert sampler.clusters() == [old, new]
        bad = [s for s in sampler.samples if s.cluster and not s.apps_running]
        assert not bad, bad


async def test_old_cluster_deleted_on_schedule_across_operator_restart() -> None:
    delay = 4
    async with running_rayservice_operator() as env:
        old = await _ready_service(env, delay=delay)
        await env.patch_spec(NS, NAME, NEW_HEAD_PARAMS)
        await eventually(
            lambda: env.cluster_name(NS, NAME) not in ("", old), what="switch to the new cluster"
        )

        def due() -> float | None:
            cluster = env.stored(RAY_CLUSTERS, NS, old)
            when = None if cluster is None else scheduled_deletion(cluster)
            return None if when is None else when.timestamp()

        await eventually(lambda: due() is not None, what="deletion scheduled")
        due_at = due()
        assert due_at is not None
        await env.stop_operator()
        down_for = 2.0  # the operator stays down this long after scheduling (the scenario)
        await asyncio.sleep(max(0.0, due_at - delay + down_for - time.time()))
        assert env.stored(RAY_CLUSTERS, NS, old) is not None
        restarted = time.time()
        await env.start_operator()
        await eventually(
            lambda: env.stored(RAY_CLUSTERS, NS, old) is None, timeout=10, what="old deleted"
        )
        [deleted] = _cluster_writes(env, "delete", old)
        assert deleted.time >= due_at - 0.1, "deleted before the scheduled time"
        assert len(_cluster_writes(env, "patch", old)) == 1, "the restart rescheduled the deletion"
        # A delay restarted by the new process could not end before restarted + delay.
        assert deleted.time < restarted + delay, "the restart restarted the delay"
        assert env.is_ready(NS, NAME)
