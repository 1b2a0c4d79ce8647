"""RayJobs and RayClusters queued by the real Kueue v0.17.0, under rayop and under KubeRay v1.7.0.

Kueue's manager runs out-of-cluster with its webhooks (``kueue_support.py``) and its own
``ray.io/rayjob`` and ``ray.io/raycluster`` integrations decide admission: its webhook suspends a
job labelled ``kueue.x-k8s.io/queue-name`` at creation, its scheduler unsuspends it (injecting
the ResourceFlavor's node labels as node selectors) when the ClusterQueue has quota, and
suspends it again to preempt it. Each test has its own namespace, LocalQueue and ClusterQueue;
the quota fits exactly one RayJob's cluster (head 1 CPU, one worker 1 CPU, submitter 500m) or
one RayCluster. Simulated Ray jobs run until the test finishes them, so "the first job is still
running" is a fact, not a race. Every test runs against rayop and then against KubeRay's binary
with the same steps and assertions: rayop must do exactly what KubeRay does under Kueue.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from rayop.kube.errors import NotFound
from rayop.kube.resources import JOBS, PODS, RAY_CLUSTERS, RAY_JOBS
from rayop.testing import eventually

from .kueue_objects import (
    FLAVOR_NODE_LABELS,
    TOY_SAMPLE,
    assert_admitted,
    condition,
    priority_class,
    queue,
    small_raycluster,
    toy_rayjob,
    workload_of,
)
from .kueue_support import (
    QUEUE_LABEL,
    KueueProcess,
    World,
    build_kueue,
    kueue_dir,
    kueue_running,
    ray_world,
)
from .ray_support import load_docs
from .real_support import build

pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(180, func_only=True),
    pytest.mark.asyncio(loop_scope="module"),
]

Obj = dict[str, Any]
WAIT = 90.0
NAMESPACE_PREFIXES = ("kueue-fifo", "kueue-rc", "kueue-preempt", "kueue-toy")
"""One namespace per test, named before the operator starts (KubeRay's --watch-namespace)."""


@pytest.fixture(scope="module")
def kueue_directory() -> Path:
    """Kueue's build (``scripts/controlplane-build kueue``); a failed build fails the tests."""
    ok, why = build_kueue()
    if not ok:
        pytest.fail(f"Kueue cannot be built here: {why}")
    return kueue_dir()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kueue(
    real_kubeconfig: str, kueue_directory: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[KueueProcess]:
    """Kueue's manager and webhooks for the module."""
    workdir = tmp_path_factory.mktemp("kueue")
    async with kueue_running(kueue_directory, real_kubeconfig, workdir) as running:
        yield running


def _kuberay_binary() -> Path:
    ok, why = build("kuberay")
    if not ok:
        pytest.fail(f"KubeRay cannot be built here: {why}")
    return kueue_dir().parents[1] / "kuberay" / "v1.7.0" / "ray-operator"


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["rayop", "kuberay"])
async def world(
    request: pytest.FixtureRequest,
    real_kubeconfig: str,
    kueue: KueueProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[World]:
    """The pod network and the operator under test (rayop, then KubeRay)."""
    binary = _kuberay_binary() if request.param == "kuberay" else None
    log_dir = tmp_path_factory.mktemp("operator")
    token = secrets.token_hex(2)
    namespaces = [f"{prefix}-{request.param}-{token}" for prefix in NAMESPACE_PREFIXES]
    async with ray_world(real_kubeconfig, namespaces, kuberay=binary, log_dir=log_dir) as running:
        yield running
    assert kueue.process.returncode is None, await kueue.log_tail()


async def rayjob(world: World, ns: str, name: str) -> Obj:
    """Reads a RayJob."""
    return await world.client.get(RAY_JOBS, name, namespace=ns)


def deployment_status(job: Obj) -> str:
    """Returns a RayJob's ``status.jobDeploymentStatus`` ("" before the first write)."""
    return str((job.get("status") or {}).get("jobDeploymentStatus") or "")


async def live_pods(world: World, ns: str, selector: str = "") -> list[Obj]:
    """Returns the pods of ``ns`` (matching ``selector``) that are not terminating."""
    listed = await world.client.list(PODS, namespace=ns, label_selector=selector or None)
    return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]


async def wait_for(
    check: Callable[[], Awaitable[bool]], what: str, *, timeout: float = WAIT
) -> None:
    """Blocks until ``check()`` holds (polling every 0.3 s at most)."""
    await eventually(check, timeout=timeout, interval=0.3, what=what)


async def wait_status(world: World, ns: str, name: str, *wanted: str) -> Obj:
    """Blocks until the RayJob's jobDeploymentStatus is one of ``wanted``; returns it."""
    seen: list[Obj] = []

    async def reached() -> bool:
        seen[:] = [await rayjob(world, ns, name)]
        return deployment_status(seen[0]) in wanted

    try:
        await wait_for(reached, f"RayJob {ns}/{name} {' or '.join(wanted)}")
    except AssertionError as err:
        raise AssertionError(
            f"{err}; last status: {seen[0].get('status') if seen else None}"
        ) from None
    return seen[0]


async def running_submission(world: World, ns: str, name: str) -> tuple[str, str]:
    """Blocks until the RayJob is Running and its cluster's head accepted its submission;
    returns (cluster, submission id)."""
    job = await wait_status(world, ns, name, "Running")
    cluster, job_id = job["status"]["rayClusterName"], job["status"]["jobId"]

    async def submitted() -> bool:
        return (cluster, job_id) in world.submissions(ns)

    await wait_for(submitted, f"RayJob {ns}/{name}: job {job_id} submitted to {cluster}")
    return cluster, job_id


async def assert_held(world: World, ns: str, name: str, *, seconds: float = 3.0) -> None:
    """Checks over ``seconds`` that the RayJob stays suspended with no cluster and no pods."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        job = await rayjob(world, ns, name)
        assert job["spec"].get("suspend") is True, job["spec"]
        assert deployment_status(job) == "Suspended", job.get("status")
        cluster = (job.get("status") or {}).get("rayClusterName")
        if cluster:
            assert not await live_pods(world, ns, f"ray.io/cluster={cluster}")
        assert not await live_pods(world, ns, f"batch.kubernetes.io/job-name={name}")
        await asyncio.sleep(0.5)


async def assert_kueue_node_selector(world: World, ns: str, cluster: str) -> None:
    """Checks that every pod of ``cluster`` carries the flavor's node labels as its selector
    (Kueue injected them into the RayJob's or RayCluster's templates at admission)."""
    pods = await live_pods(world, ns, f"ray.io/cluster={cluster}")
    assert pods, f"no pods for {ns}/{cluster}"
    for pod in pods:
        selector = pod["spec"].get("nodeSelector") or {}
        assert selector.items() >= FLAVOR_NODE_LABELS.items(), (pod["metadata"]["name"], selector)


# -- tests ---------------------------------------------------------------------------------


async def test_second_rayjob_waits_for_the_first(world: World) -> None:
    async with queue(world, "kueue-fifo") as (ns, lq):
        await world.client.create(RAY_JOBS, toy_rayjob("first", lq), namespace=ns)

        async def first_has_workload() -> bool:
            return await workload_of(world, ns, "RayJob", "first") is not None

        await wait_for(first_has_workload, "the first RayJob's Workload")
        await world.client.create(RAY_JOBS, toy_rayjob("second", lq), namespace=ns)

        cluster, job_id = await running_submission(world, ns, "first")
        first = await rayjob(world, ns, "first")
        assert not first["spec"].get("suspend")
        assert_admitted(await workload_of(world, ns, "RayJob", "first"))
        await assert_kueue_node_selector(world, ns, cluster)
        await wait_status(world, ns, "second", "Suspended")
        await assert_held(world, ns, "second")
        pending = await workload_of(world, ns, "RayJob", "second")
        assert condition(pending, "QuotaReserved").get("status") == "False", pending

        world.finish(ns, cluster, job_id)

        # The second is admitted only once the first is finished: reading the second first,
        # the first must already be Complete whenever the second shows unsuspended.
        async def second_admitted() -> bool:
            second = await rayjob(world, ns, "second")
            if second["spec"].get("suspend"):
                return False
            assert deployment_status(await rayjob(world, ns, "first")) == "Complete"
            return True

        await wait_for(second_admitted, "the second RayJob admitted")
        second_cluster, second_id = await running_submission(world, ns, "second")
        await assert_kueue_node_selector(world, ns, second_cluster)
        world.finish(ns, second_cluster, second_id)
        done = await wait_status(world, ns, "second", "Complete", "Failed")
        assert done["status"]["jobStatus"] == "SUCCEEDED", str(done["status"])

        async def finished() -> bool:
            wl = await workload_of(world, ns, "RayJob", "second")
            return condition(wl, "Finished").get("status") == "True"

        await wait_for(finished, "the second RayJob's Workload Finished")


async def test_raycluster_admitted_through_the_queue(world: World) -> None:
    async with queue(world, "kueue-rc") as (ns, lq):
        await world.client.create(RAY_CLUSTERS, small_raycluster("one", lq), namespace=ns)

        async def one_ready() -> bool:
            rc = await world.client.get(RAY_CLUSTERS, "one", namespace=ns)
            return (rc.get("status") or {}).get("state") == "ready"

        await wait_for(one_ready, "RayCluster one ready")
        one = await world.client.get(RAY_CLUSTERS, "one", namespace=ns)
        assert not one["spec"].get("suspend")
        assert_admitted(await workload_of(world, ns, "RayCluster", "one"))
        await assert_kueue_node_selector(world, ns, "one")

        await world.client.create(RAY_CLUSTERS, small_raycluster("two", lq), namespace=ns)

        async def two_suspended() -> bool:
            rc = await world.client.get(RAY_CLUSTERS, "two", namespace=ns)
            conditions = (rc.get("status") or {}).get("conditions") or []
            return any(
                c["type"] == "RayClusterSuspended" and c["status"] == "True" for c in conditions
            )

        await wait_for(two_suspended, "RayCluster two suspended")
        two = await world.client.get(RAY_CLUSTERS, "two", namespace=ns)
        assert two["spec"]["suspend"] is True
        assert not await live_pods(world, ns, "ray.io/cluster=two")

        await world.client.delete(RAY_CLUSTERS, "one", namespace=ns)

        async def two_ready() -> bool:
            rc = await world.client.get(RAY_CLUSTERS, "two", namespace=ns)
            return (rc.get("status") or {}).get("state") == "ready"

        await wait_for(two_ready, "RayCluster two ready once one is deleted")
        await assert_kueue_node_selector(world, ns, "two")


async def test_preempted_rayjob_suspends_and_resumes(world: World) -> None:
    await priority_class(world, "rayop-kueue-low", 100)
    await priority_class(world, "rayop-kueue-high", 1000)
    preemption = {"withinClusterQueue": "LowerPriority"}
    async with queue(world, "kueue-preempt", preemption=preemption) as (ns, lq):
        low = toy_rayjob("low", lq, priority_class="rayop-kueue-low")
        await world.client.create(RAY_JOBS, low, namespace=ns)
        low_cluster, _ = await running_submission(world, ns, "low")

        high = toy_rayjob("high", lq, priority_class="rayop-kueue-high")
        await world.client.create(RAY_JOBS, high, namespace=ns)

        suspended = await wait_status(world, ns, "low", "Suspended")
        assert suspended["spec"]["suspend"] is True
        status = suspended["status"]
        assert status.get("rayClusterName", "") == "" and status.get("jobId", "") == "", status
        assert status.get("jobStatus", "") == "", status  # JobStatusNew is ""
        evicted = condition(await workload_of(world, ns, "RayJob", "low"), "Evicted")
        assert evicted.get("status") == "True" and evicted.get("reason") == "Preempted", evicted
        with contextlib.suppress(NotFound):
            rc = await world.client.get(RAY_CLUSTERS, low_cluster, namespace=ns)
            pytest.fail(f"the preempted job's cluster is still there: {rc['metadata']}")
        with contextlib.suppress(NotFound):
            job = await world.client.get(JOBS, "low", namespace=ns)
            assert job["metadata"].get("deletionTimestamp"), "submitter Job not deleted"
        assert not await live_pods(world, ns, f"ray.io/cluster={low_cluster}")

        high_cluster, high_id = await running_submission(world, ns, "high")
        assert deployment_status(await rayjob(world, ns, "low")) == "Suspended"
        world.finish(ns, high_cluster, high_id)
        await wait_status(world, ns, "high", "Complete")

        resumed_cluster, resumed_id = await running_submission(world, ns, "low")
        assert resumed_cluster != low_cluster, "a resumed RayJob gets a new cluster"
        await assert_kueue_node_selector(world, ns, resumed_cluster)
        world.finish(ns, resumed_cluster, resumed_id)
        done = await wait_status(world, ns, "low", "Complete", "Failed")
        assert done["status"]["jobStatus"] == "SUCCEEDED", str(done["status"])
        low_submissions = [c for c, _ in world.submissions(ns) if c != high_cluster]
        assert low_submissions == [low_cluster, resumed_cluster]


async def test_kueue_toy_sample_converges(world: World) -> None:
    async with queue(world, "kueue-toy") as (ns, lq):
        rayjob_obj = copy.deepcopy(load_docs(TOY_SAMPLE, "RayJob")[0])
        rayjob_obj["metadata"].setdefault("labels", {})[QUEUE_LABEL] = lq
        created = await world.client.create(RAY_JOBS, rayjob_obj, namespace=ns)
        name = created["metadata"]["name"]
        assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a queued RayJob"
        cluster, job_id = await running_submission(world, ns, name)
        world.finish(ns, cluster, job_id)
        done = await wait_status(world, ns, name, "Complete", "Failed")
        assert done["status"]["jobStatus"] == "SUCCEEDED", str(done["status"])

        async def cluster_deleted() -> bool:
            try:
                await world.client.get(RAY_CLUSTERS, cluster, namespace=ns)
            except NotFound:
                return True
            return False

        # shutdownAfterJobFinishes with ttlSecondsAfterFinished: 10.
        await wait_for(cluster_deleted, f"the toy sample's cluster {cluster} deleted")

        async def finished() -> bool:
            wl = await workload_of(world, ns, "RayJob", name)
            return condition(wl, "Finished").get("status") == "True"

        await wait_for(finished, "the toy sample's Workload Finished")
