"""YuniKorn and KAI: what KubeRay v1.7 puts on pods, submitter templates and a RayJob's cluster."""

from __future__ import annotations

import json

import pytest

from rayop.controllers.batchscheduler.interface import RAY_CLUSTER, RAY_JOB, BatchSchedulingError
from rayop.controllers.batchscheduler.kai_scheduler import KaiScheduler
from rayop.controllers.batchscheduler.yunikorn import YuniKornScheduler
from rayop.testing import FakeClient

from ._samples import client, pod, sample

pytestmark = pytest.mark.asyncio


async def test_yunikorn_rayjob_sample_labels_and_task_groups() -> None:
    job = sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    scheduler = YuniKornScheduler()
    await scheduler.submit(client(FakeClient()), RAY_JOB, job)  # no objects
    template: dict[str, object] = {"spec": {"containers": []}}
    scheduler.add_metadata(RAY_JOB, job, template, "submittergroup")
    meta = template["metadata"]
    assert isinstance(meta, dict)
    assert meta["labels"] == {"applicationId": "rayjob-yunikorn-0", "queue": "root.test"}
    assert meta["annotations"]["yunikorn.apache.org/task-group-name"] == "submittergroup"
    groups = json.loads(meta["annotations"]["yunikorn.apache.org/task-groups"])
    assert [(g["name"], g["minMember"]) for g in groups] == [
        ("headgroup", 1),
        ("small-group", 1),
        ("submittergroup", 1),
    ]
    assert groups[0]["minResource"] == {"cpu": "1", "memory": "2Gi"}
    assert groups[2]["minResource"] == {"cpu": "500m", "memory": "200Mi"}
    assert template["spec"] == {"containers": [], "schedulerName": "yunikorn"}


async def test_yunikorn_task_groups_are_go_json_byte_for_byte() -> None:
    cluster = sample("ray-cluster.yunikorn-scheduler.yaml", "RayCluster")
    cluster["metadata"]["labels"]["ray.io/gang-scheduling-enabled"] = "true"
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    head["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    head["nodeSelector"] = {"zone": "a<b"}
    child = pod()
    YuniKornScheduler().add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    value = child["metadata"]["annotations"]["yunikorn.apache.org/task-groups"]
    assert value.startswith(
        '[{"minResource":{"cpu":"1","memory":"2Gi"},"nodeSelector":{"zone":"a\\u003cb"},'
        '"name":"headgroup","tolerations":[{"key":"k","operator":"Exists",'
        '"effect":"NoSchedule"}],"minMember":1}'
    )


async def test_yunikorn_without_gang_label_only_labels_and_scheduler_name() -> None:
    cluster = sample("ray-cluster.yunikorn-scheduler.yaml", "RayCluster")
    cluster["metadata"]["labels"].pop("ray.io/gang-scheduling-enabled", None)
    child = pod()
    YuniKornScheduler().add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert "annotations" not in child["metadata"]
    assert child["spec"]["schedulerName"] == "yunikorn"


async def test_yunikorn_parent_task_groups_annotation_wins() -> None:
    cluster = sample("ray-cluster.yunikorn-scheduler.yaml", "RayCluster")
    cluster["metadata"]["labels"]["ray.io/gang-scheduling-enabled"] = ""
    cluster["metadata"]["annotations"] = {"yunikorn.apache.org/task-groups": "[mine]"}
    child = pod()
    YuniKornScheduler().add_metadata(RAY_CLUSTER, cluster, child, "")
    assert child["metadata"]["annotations"] == {"yunikorn.apache.org/task-groups": "[mine]"}


@pytest.mark.parametrize(
    "file_name", ["ray-cluster.kai-scheduler.yaml", "ray-cluster.kai-gpu-sharing.yaml"]
)
async def test_kai_samples_queue_label_and_scheduler_name(file_name: str) -> None:
    cluster = sample(file_name, "RayCluster")
    child = pod()
    KaiScheduler().add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert child["metadata"]["labels"] == {
        "kai.scheduler/queue": cluster["metadata"]["labels"]["kai.scheduler/queue"]
    }
    assert child["spec"]["schedulerName"] == "kai-scheduler"


async def test_kai_without_queue_label_still_names_the_scheduler() -> None:
    cluster = sample("ray-cluster.kai-scheduler.yaml", "RayCluster")
    del cluster["metadata"]["labels"]
    child = pod()
    KaiScheduler().add_metadata(RAY_CLUSTER, cluster, child, "headgroup")
    assert child == {
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"schedulerName": "kai-scheduler"},
    }


async def test_kai_refuses_a_k8s_job_mode_rayjob_with_kuberays_message() -> None:
    job = sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    with pytest.raises(BatchSchedulingError, match="does not support RayJob with K8sJobMode"):
        await KaiScheduler().submit(client(FakeClient()), RAY_JOB, job)
    job["spec"]["submissionMode"] = "SidecarMode"
    await KaiScheduler().submit(client(FakeClient()), RAY_JOB, job)
