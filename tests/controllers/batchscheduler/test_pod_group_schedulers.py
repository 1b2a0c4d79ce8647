"""scheduler-plugins and Kubernetes WAS: their PodGroup / Workload objects and lifecycle."""

from __future__ import annotations

import copy

import pytest

from rayop.controllers.batchscheduler import kubernetes_was as was
from rayop.controllers.batchscheduler.interface import RAY_CLUSTER, RAY_JOB, BatchSchedulingError
from rayop.controllers.batchscheduler.scheduler_plugins import PODGROUPS, SchedulerPluginsScheduler
from rayop.testing import FakeClient

from ._samples import Obj, client, pod, sample

pytestmark = pytest.mark.asyncio


async def test_scheduler_plugins_sample_pod_group_created_once() -> None:
    api = FakeClient()
    cluster = sample("ray-cluster.scheduler-plugins.yaml", "RayCluster")
    scheduler = SchedulerPluginsScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    group = api.stored(PODGROUPS, "ns", "test-podgroup-0")
    assert group is not None
    assert group["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "test-podgroup-0",
            "uid": "uid-owner",
        }
    ]
    assert group["spec"]["minMember"] == 3
    scaled = copy.deepcopy(cluster)
    scaled["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    await scheduler.submit(client(api), RAY_CLUSTER, scaled)
    assert [c.verb for c in api.writes()] == ["create"]  # never resized, as KubeRay
    child = pod()
    scheduler.add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert child["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "test-podgroup-0"}
    assert child["spec"]["schedulerName"] == "scheduler-plugins-scheduler"


async def test_scheduler_plugins_without_gang_label_and_for_rayjobs() -> None:
    api = FakeClient()
    cluster = sample("ray-cluster.scheduler-plugins.yaml", "RayCluster")
    del cluster["metadata"]["labels"]
    scheduler = SchedulerPluginsScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    assert api.writes() == []
    child = pod()
    scheduler.add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert child["metadata"] == {"name": "p"}
    job = sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    with pytest.raises(BatchSchedulingError, match="only RayCluster is supported"):
        await scheduler.submit(client(api), RAY_JOB, job)


def was_cluster() -> Obj:
    cluster = sample("ray-cluster.scheduler-plugins.yaml", "RayCluster")
    cluster["metadata"]["labels"] = {"ray.io/gang-scheduling-enabled": "True"}
    return cluster


async def test_was_workload_and_pod_group_and_pod_fields() -> None:
    api, cluster = FakeClient(), was_cluster()
    scheduler = was.KubernetesWASScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    workload = api.stored(was.WORKLOADS, "ns", "test-podgroup-0")
    group = api.stored(was.PODGROUPS, "ns", "test-podgroup-0-cluster")
    assert workload is not None and group is not None
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": "test-podgroup-0"},
        "podGroupTemplates": [{"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 3}}}],
    }
    assert group["spec"] == {
        "podGroupTemplateRef": {
            "workload": {"workloadName": "test-podgroup-0", "podGroupTemplateName": "cluster"}
        },
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }
    assert group["metadata"]["labels"] == {"ray.io/cluster": "test-podgroup-0"}
    child = pod()
    scheduler.add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert child["spec"] == {
        "schedulerName": "default-scheduler",
        "schedulingGroup": {"podGroupName": "test-podgroup-0-cluster"},
    }


async def test_was_scale_replaces_stale_objects_pod_group_first() -> None:
    api, cluster = FakeClient(), was_cluster()
    scheduler = was.KubernetesWASScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    group = api.stored(was.PODGROUPS, "ns", "test-podgroup-0-cluster")
    assert group is not None
    group["metadata"]["finalizers"] = [was.PROTECTION_FINALIZER]  # as kube-apiserver adds it
    api.put(was.PODGROUPS, group)
    scaled = copy.deepcopy(cluster)
    scaled["spec"]["workerGroupSpecs"][0].update(replicas=1, minReplicas=1)
    with pytest.raises(was.RetryLaterError, match="before replacing stale Workload"):
        await scheduler.submit(client(api), RAY_CLUSTER, scaled)
    assert api.stored(was.PODGROUPS, "ns", "test-podgroup-0-cluster") is None
    with pytest.raises(was.RetryLaterError, match="deleted stale Workload"):
        await scheduler.submit(client(api), RAY_CLUSTER, scaled)
    await scheduler.submit(client(api), RAY_CLUSTER, scaled)
    renewed = api.stored(was.WORKLOADS, "ns", "test-podgroup-0")
    assert renewed is not None
    assert renewed["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 2


async def test_was_objects_of_others_are_never_touched() -> None:
    api, cluster = FakeClient(), was_cluster()
    api.put(was.WORKLOADS, {"metadata": {"name": "test-podgroup-0", "namespace": "ns"}})
    with pytest.raises(was.RetryLaterError, match="not owned by this RayCluster"):
        await was.KubernetesWASScheduler().submit(client(api), RAY_CLUSTER, cluster)
    assert api.writes() == []


async def test_was_label_removed_or_autoscaling_deletes_the_objects() -> None:
    api, cluster = FakeClient(), was_cluster()
    scheduler = was.KubernetesWASScheduler()
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    cluster["spec"]["enableInTreeAutoscaling"] = True
    child = pod()
    scheduler.add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert child["spec"] == {}
    with pytest.raises(was.RetryLaterError, match="to finish deleting"):
        await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    await scheduler.submit(client(api), RAY_CLUSTER, cluster)
    assert api.stored(was.WORKLOADS, "ns", "test-podgroup-0") is None
    await scheduler.submit(
        client(api), RAY_JOB, sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    )
