"""RayCluster lifecycle end to end: create, scale, workersToDelete, suspend, heal, delete."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from rayop.kube.resources import JOBS, PODS, RAY_CLUSTERS, SERVICES
from rayop.testing import eventually

from .raycluster_env import OperatorEnv, load_sample, simple_cluster

NS = "lifecycle"


def _workers(env: OperatorEnv, name: str) -> list[dict[str, Any]]:
    return [
        p for p in env.pods(NS, name) if p["metadata"]["labels"]["ray.io/node-type"] == "worker"
    ]


async def test_cluster_converges_with_services_and_kuberay_status(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("basic", workers=3), NS)
    await eventually(lambda: env.converged(NS, "basic"), what="basic ready")
    rc = env.raycluster(NS, "basic")
    assert rc is not None
    status = rc["status"]
    assert status["readyWorkerReplicas"] == 3
    assert status["availableWorkerReplicas"] == 3
    assert status["head"]["serviceName"] == "basic-head-svc"
    assert status["head"]["podIP"]
    assert status["endpoints"]["dashboard"] == "8265"
    services = {s["metadata"]["name"]: s for s in env.objects(SERVICES, NS)}
    assert services["basic-head-svc"]["spec"]["clusterIP"] == "None"
    heads = [
        p for p in env.pods(NS, "basic") if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    assert len(heads) == 1 and heads[0]["metadata"]["name"].startswith("basic-head-")
    assert {e["reason"] for e in env.events(NS)} >= {
        "CreatedHeadPod",
        "CreatedWorkerPod",
        "CreatedService",
    }


async def test_scale_up_and_down_through_replicas(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("scale", workers=1), NS)
    await eventually(lambda: env.converged(NS, "scale"), what="scale ready")

    def set_replicas(n: int) -> Callable[[dict[str, Any]], None]:
        def mutate(obj: dict[str, Any]) -> None:
            obj["spec"]["workerGroupSpecs"][0]["replicas"] = n

        return mutate

    await env.edit(NS, "scale", set_replicas(5))
    await eventually(
        lambda: len(_workers(env, "scale")) == 5 and env.converged(NS, "scale"), what="5 workers"
    )
    await env.edit(NS, "scale", set_replicas(2))
    await eventually(
        lambda: len(_workers(env, "scale")) == 2 and env.converged(NS, "scale"), what="2 workers"
    )
    creates = [
        w
        for w in env.cp.audit.writes
        if w.verb == "create" and w.resource == "pods" and w.namespace == NS
    ]
    deletes = [
        w
        for w in env.cp.audit.writes
        if w.verb == "delete" and w.resource == "pods" and w.namespace == NS
    ]
    assert len(creates) == 1 + 5  # head, then 1 + 4 workers: nothing created twice
    assert len(deletes) == 3
    assert env.events(NS, "DeletedWorkerPod")


async def test_workers_to_delete_removes_named_pods_and_is_kept_in_spec(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("wtd", workers=3), NS)
    await eventually(lambda: env.converged(NS, "wtd"), what="wtd ready")
    victims = sorted(p["metadata"]["name"] for p in _workers(env, "wtd"))[:2]

    def mutate(obj: dict[str, Any]) -> None:
        group = obj["spec"]["workerGroupSpecs"][0]
        group["replicas"] = 1
        group["scaleStrategy"] = {"workersToDelete": victims}

    await env.edit(NS, "wtd", mutate)
    await eventually(
        lambda: len(_workers(env, "wtd")) == 1 and env.converged(NS, "wtd"), what="1 worker"
    )
    remaining = {p["metadata"]["name"] for p in _workers(env, "wtd")}
    assert not remaining & set(victims)
    rc = await env.client.get(RAY_CLUSTERS, "wtd", namespace=NS)
    assert rc["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] == victims


async def test_suspend_deletes_all_pods_and_resume_recreates_them(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("susp", workers=2), NS)
    await eventually(lambda: env.converged(NS, "susp"), what="susp ready")

    def suspend(value: bool) -> Callable[[dict[str, Any]], None]:
        def mutate(obj: dict[str, Any]) -> None:
            obj["spec"]["suspend"] = value

        return mutate

    def conditions() -> dict[str, str]:
        rc = env.raycluster(NS, "susp") or {}
        return {c["type"]: c["status"] for c in (rc.get("status") or {}).get("conditions") or []}

    await env.edit(NS, "susp", suspend(True))
    await eventually(
        lambda: (
            not env.pods(NS, "susp", live_only=False)
            and conditions().get("RayClusterSuspended") == "True"
        ),
        what="suspended",
    )
    assert (env.raycluster(NS, "susp") or {})["status"]["state"] == "suspended"
    assert conditions().get("RayClusterSuspending") == "False"
    await env.edit(NS, "susp", suspend(False))
    await eventually(
        lambda: (
            len(env.pods(NS, "susp")) == 3 and conditions().get("RayClusterSuspended") == "False"
        ),
        what="resumed",
    )
    await eventually(lambda: env.converged(NS, "susp"), what="susp ready again")


async def test_deleted_head_pod_is_recreated(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("heal", workers=1), NS)
    await eventually(lambda: env.converged(NS, "heal"), what="heal ready")
    (head,) = [
        p for p in env.pods(NS, "heal") if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    await env.client.delete(PODS, head["metadata"]["name"], namespace=NS)
    await eventually(
        lambda: any(
            p["metadata"]["labels"]["ray.io/node-type"] == "head"
            and p["metadata"]["name"] != head["metadata"]["name"]
            for p in env.pods(NS, "heal")
        ),
        what="a new head pod",
    )
    await eventually(lambda: env.converged(NS, "heal"), what="heal ready again")


async def test_failed_worker_is_replaced(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("unhealthy", workers=2), NS)
    await eventually(lambda: env.converged(NS, "unhealthy"), what="unhealthy ready")
    victim = _workers(env, "unhealthy")[0]
    info = env.cp.store.resources.get("", "v1", "pods")
    assert info is not None
    pod = copy.deepcopy(await env.cp.store.get(info, NS, victim["metadata"]["name"]))
    pod["status"]["phase"] = "Failed"
    await env.cp.store.update(info, NS, pod["metadata"]["name"], pod, subresource="status")
    await eventually(
        lambda: (
            victim["metadata"]["name"]
            not in {p["metadata"]["name"] for p in env.pods(NS, "unhealthy", live_only=False)}
            and len(_workers(env, "unhealthy")) == 2
        ),
        what="failed worker replaced",
    )
    await eventually(lambda: env.converged(NS, "unhealthy"), what="unhealthy ready again")
    assert env.events(NS, "DeletedWorkerPod")


async def test_deleting_the_raycluster_removes_everything_it_owned(env: OperatorEnv) -> None:
    await env.apply(simple_cluster("gone", workers=2), NS)
    await eventually(lambda: env.converged(NS, "gone"), what="gone ready")
    await env.client.delete(RAY_CLUSTERS, "gone", namespace=NS)

    def owned_left() -> int:
        pods = env.pods(NS, "gone", live_only=False)
        svcs = [s for s in env.objects(SERVICES, NS) if s["metadata"]["name"].startswith("gone-")]
        return len(pods) + len(svcs) + (env.raycluster(NS, "gone") is not None)

    await eventually(lambda: owned_left() == 0, what="everything garbage-collected")


async def test_gcs_ft_cluster_is_deleted_after_the_redis_cleanup_job(env: OperatorEnv) -> None:
    (sample,) = load_sample("ray-cluster.external-redis.yaml")
    name = sample["metadata"]["name"]
    await env.apply(sample, "redis")
    await eventually(lambda: env.converged("redis", name), what="FT cluster ready")
    rc = env.raycluster("redis", name)
    assert (
        rc is not None and "ray.io/gcs-ft-redis-cleanup-finalizer" in rc["metadata"]["finalizers"]
    )
    await env.client.delete(RAY_CLUSTERS, name, namespace="redis")
    seen: dict[str, dict[str, Any]] = {}

    def cleanup_job_completed() -> bool:
        for job in env.objects(JOBS, "redis"):
            if job["metadata"]["name"] == f"{name}-redis-cleanup":
                seen["job"] = job
        conditions = (seen.get("job", {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)

    await eventually(cleanup_job_completed, what="the cleanup Job completed")
    assert env.raycluster("redis", name) is not None, (
        "the finalizer holds the RayCluster until then"
    )
    assert (
        seen["job"]["spec"]["template"]["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    )
    await eventually(lambda: env.raycluster("redis", name) is None, what="the RayCluster gone")
    assert env.pods("redis", name, live_only=False) == []
    assert env.events("redis", "CreatedRedisCleanupJob")
    writes = [w for w in env.cp.audit.writes if w.namespace == "redis" and w.code < 300]
    job_created = next(
        i for i, w in enumerate(writes) if w.resource == "jobs" and w.verb == "create"
    )
    finalizer_updates = [
        i
        for i, w in enumerate(writes)
        if w.resource == "rayclusters" and w.verb == "update" and not w.subresource
    ]
    assert len(finalizer_updates) == 2 and finalizer_updates[0] < job_created < finalizer_updates[1]


async def test_status_writes_never_race_the_cache_behind_our_own_last_write(
    env: OperatorEnv,
) -> None:
    """Pod events arrive faster than the RayCluster cache shows the previous status write;
    rayop waits for its own write instead of sending a write bound to fail with 409."""
    await env.apply(simple_cluster("no-conflicts", workers=4), NS)
    await eventually(lambda: env.converged(NS, "no-conflicts"), what="no-conflicts ready")
    status_writes = [
        w
        for w in env.cp.audit.writes
        if w.resource == "rayclusters" and w.subresource == "status" and w.name == "no-conflicts"
    ]
    assert status_writes, "the status was never written"
    assert [w.code for w in status_writes if w.code == 409] == []
