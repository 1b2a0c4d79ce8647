"""The GCS FT Redis cleanup finalizer step on virtual time (kuberay-v1.md §3.1 steps 6-7)."""

from __future__ import annotations

from typing import Any

from rayop.api.common import format_time
from rayop.controllers.raycluster.redis_cleanup import FINALIZER, reconcile_redis_cleanup
from rayop.kube.resources import JOBS
from rayop.runtime.steps import StatusEdits

from ._fakes import Fakes, context, pod
from ._fixtures import minimal_cluster

REDIS = {"redisAddress": "redis:6379"}


def _ft_cluster(
    *, finalizer: bool = True, deleted_at: str | None = None, **spec: Any
) -> dict[str, Any]:
    cluster = minimal_cluster(gcsFaultToleranceOptions=spec.pop("ft", REDIS), **spec)
    if finalizer:
        cluster["metadata"]["finalizers"] = [FINALIZER]
    if deleted_at is not None:
        cluster["metadata"]["deletionTimestamp"] = deleted_at
    return cluster


async def test_the_finalizer_is_added_then_the_pass_goes_on() -> None:
    fakes = Fakes()
    stop = await reconcile_redis_cleanup(context(_ft_cluster(finalizer=False), fakes))
    assert stop is not None and stop.status is StatusEdits.DISCARD
    assert stop.result.requeue_after == 2.0
    (update,) = fakes.api.calls_of("update", "RayCluster")
    assert update.body["metadata"]["finalizers"] == [FINALIZER]
    assert await reconcile_redis_cleanup(context(_ft_cluster(), fakes)) is None
    assert await reconcile_redis_cleanup(context(minimal_cluster(), fakes)) is None


async def test_deleting_removes_pods_and_waits_for_the_head() -> None:
    fakes = Fakes()
    fakes.add_pod(pod("rc-head-1", "head", "headgroup"))
    fakes.add_pod(pod("w1", "worker", "g"))
    now = format_time(fakes.clock.wall())

    stop = await reconcile_redis_cleanup(context(_ft_cluster(deleted_at=now), fakes))

    assert stop is not None and stop.result.requeue_after == 10.0
    assert [c.name for c in fakes.api.calls_of("delete", "Pod")] == ["rc-head-1", "w1"]
    assert fakes.api.calls_of("create", "Job") == []


async def test_without_pods_the_cleanup_job_runs_and_its_end_removes_the_finalizer() -> None:
    fakes = Fakes()
    cluster = _ft_cluster(deleted_at=format_time(fakes.clock.wall()))

    stop = await reconcile_redis_cleanup(context(cluster, fakes))

    assert stop is not None and stop.result.requeue_after == 2.0
    (job,) = fakes.api.calls_of("create", "Job")
    assert job.name == "rc-redis-cleanup"
    assert job.body["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    assert fakes.events.reasons() == ["CreatedRedisCleanupJob"]

    jobs = fakes.informers.informer(JOBS)
    jobs.put({"metadata": {"name": "rc-redis-cleanup"}, "status": {}})
    stop = await reconcile_redis_cleanup(context(cluster, fakes))
    assert stop is not None and stop.result.requeue_after == 2.0, "still running"
    complete = {"conditions": [{"type": "Complete", "status": "True"}]}
    jobs.put({"metadata": {"name": "rc-redis-cleanup"}, "status": complete})
    stop = await reconcile_redis_cleanup(context(cluster, fakes))
    assert stop is not None and stop.result.requeue_after is None
    (update,) = fakes.api.calls_of("update", "RayCluster")
    assert update.body["metadata"]["finalizers"] == []


async def test_after_the_deletion_timeout_the_finalizer_goes_without_cleanup() -> None:
    fakes = Fakes()
    cluster = _ft_cluster(deleted_at=format_time(fakes.clock.wall()))
    cluster["metadata"]["annotations"] = {"ray.io/gcs-ft-deletion-timeout": "60"}
    fakes.clock.step(59)
    await reconcile_redis_cleanup(context(cluster, fakes))
    assert fakes.api.calls_of("update") == []

    fakes.clock.step(1)
    stop = await reconcile_redis_cleanup(context(cluster, fakes))

    assert stop is not None and stop.result.requeue_after is None
    assert fakes.api.calls_of("update", "RayCluster")[0].body["metadata"]["finalizers"] == []
    assert fakes.events.reasons()[-1] == "ForceDeletedStuckCluster"


async def test_embedded_ft_drops_a_stale_finalizer_on_deletion() -> None:
    fakes = Fakes()
    cluster = _ft_cluster(ft={"backend": "rocksdb"}, deleted_at=format_time(fakes.clock.wall()))
    stop = await reconcile_redis_cleanup(context(cluster, fakes))
    assert stop is not None and stop.status is StatusEdits.DISCARD
    assert fakes.api.calls_of("update", "RayCluster")[0].body["metadata"]["finalizers"] == []
    assert fakes.api.calls_of("create") == []
