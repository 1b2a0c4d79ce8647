"""What a finished RayJob deletes, and when: shutdownAfterJobFinishes with its TTL, deletion
rules, the legacy onSuccess/onFailure policies, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, and never
a clusterSelector cluster.

Status timestamps have one-second resolution (metav1.Time) and KubeRay acts 2 s after a
deadline, so an action due ``ttl`` seconds after the job ended happens between ``ttl - 1`` and
``ttl + 2`` seconds after the test saw the job finish (plus a little scheduling slack).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import CORE_EVENTS, PODS, RAY_CLUSTERS
from rayop.testing import eventually

from .raycluster_env import load_sample
from .rayjob_env import FAILING_ENTRYPOINT, RayJobEnv, running_rayjob_operator, small_rayjob

pytestmark = pytest.mark.asyncio(loop_scope="module")
SLACK = 1.5


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[RayJobEnv]:
    async with running_rayjob_operator() as running:
        yield running


async def finish(
    env: RayJobEnv, namespace: str, name: str, *states: str
) -> tuple[dict[str, Any], float]:
    """Waits until the RayJob is finished; returns its status and when the test saw it."""
    status = await env.wait_for_status(namespace, name, *(states or ("Complete",)))
    return status, time.monotonic()


async def wait_gone(predicate: Any, what: str, timeout: float = 15.0) -> float:
    await eventually(predicate, timeout=timeout, what=what)
    return time.monotonic()


def assert_due(elapsed: float, ttl: float) -> None:
    assert ttl - 1.0 <= elapsed <= ttl + 2.0 + SLACK, (elapsed, ttl)


def worker_pods(env: RayJobEnv, namespace: str, cluster: str) -> list[dict[str, Any]]:
    return [
        p
        for p in env.objects(PODS, namespace)
        if p["metadata"].get("labels", {}).get("ray.io/cluster") == cluster
        and p["metadata"]["labels"].get("ray.io/node-type") == "worker"
    ]


async def test_shutdown_after_job_finishes_deletes_cluster_after_ttl(env: RayJobEnv) -> None:
    ns = await env.namespace("shutdown-ttl")
    await env.apply(
        small_rayjob("job", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=2), ns
    )
    status, done = await finish(env, ns, "job")
    cluster = status["rayClusterName"]
    assert env.raycluster(ns, cluster) is not None
    gone = await wait_gone(lambda: env.raycluster(ns, cluster) is None, "cluster deletion")
    assert_due(gone - done, 2)
    # the submitter Job stays for its logs, the RayJob stays Complete
    assert env.batch_job(ns, "job") is not None
    assert env.deployment_status(ns, "job") == "Complete"
    assert env.batch_job(ns, "job")["spec"]["ttlSecondsAfterFinished"] == 2  # type: ignore[index]


async def test_deletion_rules_fire_in_turn(env: RayJobEnv) -> None:
    ns = await env.namespace("deletion-rules")
    rules = [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 3}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 6}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED", "ttlSeconds": 0}},
    ]
    await env.apply(small_rayjob("job", deletionStrategy={"deletionRules": rules}), ns)
    status, done = await finish(env, ns, "job")
    cluster = status["rayClusterName"]

    def workers_suspended() -> bool:
        rc = env.raycluster(ns, cluster)
        groups = (rc or {}).get("spec", {}).get("workerGroupSpecs") or []
        return bool(groups) and all(g.get("suspend") for g in groups)

    suspended = await wait_gone(workers_suspended, "worker groups suspended")
    assert_due(suspended - done, 0)
    assert env.raycluster(ns, cluster) is not None
    await eventually(lambda: not worker_pods(env, ns, cluster), what="worker pods gone")
    cluster_gone = await wait_gone(lambda: env.raycluster(ns, cluster) is None, "cluster gone")
    assert_due(cluster_gone - done, 3)
    assert env.rayjob(ns, "job") is not None
    self_gone = await wait_gone(lambda: env.rayjob(ns, "job") is None, "RayJob gone")
    assert_due(self_gone - done, 6)


async def test_failed_deployment_rule_deletes_cluster(env: RayJobEnv) -> None:
    ns = await env.namespace("deletion-failed")
    rules = [
        {
            "policy": "DeleteCluster",
            "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": 1},
        },
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
    ]
    job = small_rayjob(
        "job", entrypoint=FAILING_ENTRYPOINT, deletionStrategy={"deletionRules": rules}
    )
    await env.apply(job, ns)
    status, done = await finish(env, ns, "job", "Failed")
    cluster = status["rayClusterName"]
    gone = await wait_gone(lambda: env.raycluster(ns, cluster) is None, "cluster deletion")
    assert_due(gone - done, 1)
    assert env.rayjob(ns, "job") is not None


async def test_legacy_policies_pick_on_success(env: RayJobEnv) -> None:
    ns = await env.namespace("legacy-policy")
    # KubeRay refuses a TTL without shutdownAfterJobFinishes, and that with DeleteNone: the
    # legacy policies act as soon as the job finishes.
    strategy = {"onSuccess": {"policy": "DeleteSelf"}, "onFailure": {"policy": "DeleteNone"}}
    await env.apply(small_rayjob("job", deletionStrategy=strategy), ns)
    await wait_gone(lambda: env.rayjob(ns, "job") is None, "RayJob deletion", timeout=30)


async def test_cluster_selector_cluster_is_never_deleted(env: RayJobEnv) -> None:
    ns = await env.namespace("selector-kept")
    existing = load_sample("ray-cluster.sample.yaml")[0]
    existing["metadata"]["name"] = "shared"
    await env.apply_cluster(existing, ns)
    # DeleteCluster and DeleteWorkers are refused with a cluster selector, and KubeRay skips
    # every deletion of a RayJob that selected an existing cluster, even DeleteSelf.
    rules = [{"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}}]
    job = small_rayjob("job", deletionStrategy={"deletionRules": rules})
    del job["spec"]["rayClusterSpec"]
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    await env.apply(job, ns)
    status, _ = await finish(env, ns, "job")
    assert status["rayClusterName"] == "shared"
    await env.wait_for_status(ns, "job", "Complete")
    # give the operator a few passes past the rule's deadline (+2 s margin)
    deadline = time.monotonic() + 3.0
    await eventually(lambda: time.monotonic() > deadline, timeout=5)
    rc = env.raycluster(ns, "shared")
    assert rc is not None and not rc["metadata"].get("deletionTimestamp")
    assert env.cluster_creates(ns) == ["shared"]
    assert env.rayjob(ns, "job") is not None


async def test_delete_rayjob_cr_after_job_finishes() -> None:
    options = OperatorOptions(delete_rayjob_cr_after_job_finishes=True)
    async with running_rayjob_operator(options=options) as env:
        ns = await env.namespace("delete-cr")
        job = small_rayjob("job", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=1)
        await env.apply(job, ns)
        _, done = await finish(env, ns, "job")
        gone = await wait_gone(lambda: env.rayjob(ns, "job") is None, "RayJob deletion")
        assert_due(gone - done, 1)
        # its cluster and submitter Job go with it (owner references)
        await eventually(lambda: not env.objects(RAY_CLUSTERS, ns))


async def test_a_cluster_taken_out_of_the_rayjobs_control_is_never_deleted(
    env: RayJobEnv,
) -> None:
    """A user who orphans the RayJob's cluster (drops its ownerReference) keeps it."""
    ns = await env.namespace("orphaned-cluster")
    await env.apply(
        small_rayjob("job", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=1), ns
    )
    status, _ = await finish(env, ns, "job")
    cluster = status["rayClusterName"]
    await env.client.patch(
        RAY_CLUSTERS, cluster, {"metadata": {"ownerReferences": None}}, namespace=ns
    )

    def warned() -> bool:
        return any(
            e.get("reason") == "SkippedDeletingUnownedObject" for e in env.objects(CORE_EVENTS, ns)
        )

    await eventually(warned, timeout=10.0, what="a Warning event about the unowned cluster")
    assert env.raycluster(ns, cluster) is not None
    assert env.deployment_status(ns, "job") == "Complete"
