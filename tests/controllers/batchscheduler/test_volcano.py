"""Volcano: the PodGroup KubeRay v1.7 makes for the samples, its resizing, the pod fields."""

from __future__ import annotations

import copy

import pytest

from rayop.controllers.batchscheduler.interface import RAY_CLUSTER, RAY_JOB, BatchSchedulingError
from rayop.controllers.batchscheduler.volcano import PODGROUPS, VolcanoScheduler
from rayop.kube.resources import RAY_CLUSTERS
from rayop.testing import FakeClient

from ._samples import client, pod, sample

pytestmark = pytest.mark.asyncio


async def test_rayjob_sample_pod_group_counts_the_submitter_resources_not_its_pod() -> None:
    api, job = FakeClient(), sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    await VolcanoScheduler().submit(client(api), RAY_JOB, job)
    group = api.stored(PODGROUPS, "ns", "ray-rayjob-sample-0-pg")
    assert group is not None
    assert group["spec"] == {
        "minMember": 3,  # head + 2 workers; the submitter is not a member
        "minResources": {"cpu": "3500m", "memory": "4296Mi"},  # + 500m / 200Mi submitter
        "queue": "kuberay-test-queue",
    }
    assert group["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "name": "rayjob-sample-0",
            "uid": "uid-owner",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert group["status"] == {"phase": "Pending"}


async def test_raycluster_sample_pod_group_and_a_scale_resizes_it() -> None:
    api = FakeClient()
    cluster = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    scheduler = VolcanoScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    name = f"ray-{cluster['metadata']['name']}-pg"
    first = api.stored(PODGROUPS, "ns", name)
    assert first is not None and first["spec"]["queue"] == "kuberay-test-queue"
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    assert [c.verb for c in api.writes()] == ["create"]  # nothing changed: no write
    bigger = copy.deepcopy(cluster)
    bigger["spec"]["workerGroupSpecs"][0]["replicas"] += 1
    bigger["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 10
    await scheduler.submit(client(api), RAY_CLUSTER, bigger)
    resized = api.stored(PODGROUPS, "ns", name)
    assert resized is not None
    assert resized["spec"]["minMember"] == first["spec"]["minMember"] + 1
    assert [c.verb for c in api.writes()] == ["create", "update"]


async def test_cluster_made_by_a_rayjob_gets_no_pod_group_and_pods_join_the_jobs() -> None:
    api = FakeClient()
    cluster = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    cluster["metadata"]["labels"].update(
        {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "job-1"}
    )
    scheduler = VolcanoScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    assert api.writes() == []
    child = pod()
    scheduler.add_metadata(RAY_CLUSTER, cluster, child, "small-group")
    assert child["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "ray-job-1-pg",
        "volcano.sh/task-spec": "small-group",
    }
    assert child["metadata"]["labels"] == {"volcano.sh/queue-name": "kuberay-test-queue"}
    assert child["spec"]["schedulerName"] == "volcano"


async def test_priority_class_and_network_topology_labels() -> None:
    api = FakeClient()
    cluster = sample("ray-cluster.volcano-scheduler.yaml", "RayCluster")
    cluster["metadata"].setdefault("labels", {}).update(
        {
            "ray.io/priority-class-name": "no-such-class",  # Volcano reports it, not rayop
            "volcano.sh/network-topology-mode": "hard",
            "volcano.sh/network-topology-highest-tier-allowed": "2",
        }
    )
    await VolcanoScheduler().submit(client(api), RAY_CLUSTER, cluster)
    group = api.stored(PODGROUPS, "ns", f"ray-{cluster['metadata']['name']}-pg")
    assert group is not None
    assert group["spec"]["priorityClassName"] == "no-such-class"
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    cluster["metadata"]["labels"]["volcano.sh/network-topology-highest-tier-allowed"] = "two"
    cluster["metadata"]["name"] = "other"
    with pytest.raises(BatchSchedulingError, match="failed to convert"):
        await VolcanoScheduler().submit(client(api), RAY_CLUSTER, cluster)


async def test_rayjob_with_cluster_selector_is_refused_with_kuberays_message() -> None:
    job = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    del job["spec"]["rayClusterSpec"]
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "c"}
    with pytest.raises(BatchSchedulingError, match="referencing an existing RayCluster"):
        await VolcanoScheduler().submit(client(FakeClient()), RAY_JOB, job)


async def test_finished_rayjob_releases_the_queue_once_its_cluster_is_gone() -> None:
    api, job = FakeClient(), sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    scheduler = VolcanoScheduler()
    await scheduler.submit(client(api), RAY_JOB, job)
    job["status"] = {"rayClusterName": "rayjob-sample-0-abcde"}
    cluster = {"metadata": {"name": "rayjob-sample-0-abcde", "namespace": "ns"}}
    cluster["spec"] = copy.deepcopy(job["spec"]["rayClusterSpec"])
    api.put(RAY_CLUSTERS, cluster)
    assert await scheduler.cleanup(client(api), job) is True  # the submitter's share released
    group = api.stored(PODGROUPS, "ns", "ray-rayjob-sample-0-pg")
    assert group is not None and group["spec"]["minResources"] == {"cpu": "3", "memory": "4Gi"}
    await api.delete(RAY_CLUSTERS, "rayjob-sample-0-abcde", namespace="ns")
    assert await scheduler.cleanup(client(api), job) is True
    group = api.stored(PODGROUPS, "ns", "ray-rayjob-sample-0-pg")
    assert group is not None and group["spec"] == {
        "minResources": {},
        "queue": "kuberay-test-queue",
    }
    assert await scheduler.cleanup(client(api), job) is False


async def test_a_pod_group_the_operator_did_not_create_is_never_deleted() -> None:
    api, job = FakeClient(), sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    theirs = {"metadata": {"name": "ray-rayjob-sample-0-pg", "namespace": "ns"}, "spec": {}}
    api.put(PODGROUPS, theirs)
    job["status"] = {"rayClusterName": "gone"}
    await VolcanoScheduler().cleanup(client(api), job)
    assert api.stored(PODGROUPS, "ns", "ray-rayjob-sample-0-pg") is not None
    assert api.calls_of("delete") == []
