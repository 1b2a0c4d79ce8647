"""Per-pass pod plans: unhealthy pods, workersToDelete, scale up/down, multi-host replicas."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from rayop.controllers.config.options import DEFAULT_OPTIONS
from rayop.controllers.raycluster.pod_health import should_delete_pod
from rayop.controllers.raycluster.scaling import plan_head

from ._fixtures import minimal_cluster, worker_plan


def _pod(
    name: str,
    *,
    phase: str = "Running",
    index: int | None = None,
    replica: str | None = None,
    terminated: bool = False,
    restart: str = "Always",
) -> dict[str, Any]:
    labels = {"ray.io/node-type": "worker", "ray.io/group": "g"}
    if index is not None:
        labels["ray.io/worker-group-replica-index"] = str(index)
    if replica is not None:
        labels["ray.io/worker-group-replica-name"] = replica
    state = {"terminated": {"exitCode": 1}} if terminated else {"running": {}}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"restartPolicy": restart, "containers": [{"name": "ray"}]},
        "status": {"phase": phase, "containerStatuses": [{"name": "ray", "state": state}]},
    }


def test_should_delete_pod_rules() -> None:
    assert should_delete_pod(_pod("a", phase="Failed"), "worker")[0]
    assert should_delete_pod(_pod("a", phase="Succeeded"), "head")[0]
    assert should_delete_pod(_pod("a", terminated=True, restart="Never"), "worker")[0]
    keep, reason = should_delete_pod(_pod("a", terminated=True, restart="Always"), "worker")
    assert not keep and "should be able to restart automatically" in reason
    assert not should_delete_pod(_pod("a", phase="Pending"), "worker")[0]


def test_scale_up_uses_lowest_free_indices() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"] = 4
    plan = worker_plan(cluster, group, [_pod("a", index=1)], options=DEFAULT_OPTIONS)
    assert [c.replica_index for c in plan.creations] == [0, 2, 3]
    assert plan.deletions == () and plan.error is None


def test_unhealthy_pods_are_deleted_then_error_without_creating() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    plan = worker_plan(cluster, group, [_pod("bad", phase="Failed")], options=DEFAULT_OPTIONS)
    assert [d.name for d in plan.deletions] == ["bad"] and not plan.deletions[0].ignore_not_found
    assert plan.creations == () and plan.error == "delete 1 unhealthy worker Pods"


def test_workers_to_delete_then_replace_to_desired() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["scaleStrategy"] = {"workersToDelete": ["a", "gone"]}
    plan = worker_plan(
        cluster, group, [_pod("a", index=0), _pod("b", index=1)], options=DEFAULT_OPTIONS
    )
    assert [d.name for d in plan.deletions] == ["a", "gone"]
    assert all(d.ignore_not_found for d in plan.deletions)
    assert [c.replica_index for c in plan.creations] == [0]
    assert group["scaleStrategy"]["workersToDelete"] == ["a", "gone"]  # the spec is never cleared


def test_scale_down_only_without_autoscaler_or_with_random_delete() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"] = 1
    pods = [_pod("a"), _pod("b"), _pod("c")]
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS)
    assert [d.name for d in plan.deletions] == ["a", "b"]
    cluster["spec"]["enableInTreeAutoscaling"] = True
    assert worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS).deletions == ()
    random_delete = dataclasses.replace(DEFAULT_OPTIONS, enable_random_pod_delete=True)
    assert len(worker_plan(cluster, group, pods, options=random_delete).deletions) == 2


def test_suspended_group_deletes_all() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["suspend"] = True
    assert worker_plan(cluster, group, [_pod("a")], options=DEFAULT_OPTIONS).delete_all


def test_multi_host_scale_up_creates_whole_replicas() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=2, numOfHosts=2)
    pods = [_pod("a0", index=0, replica="g-aaaaa"), _pod("a1", index=0, replica="g-aaaaa")]
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS, rng=random.Random(7))
    assert [(c.replica_index, c.host_index) for c in plan.creations] == [(1, 0), (1, 1)]
    assert plan.creations[0].replica_name == plan.creations[1].replica_name
    assert (
        plan.creations[0].replica_name.startswith("g-")
        and plan.creations[0].replica_name != "g-aaaaa"
    )


def test_multi_host_incomplete_unhealthy_and_workers_to_delete() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=2, numOfHosts=2)
    incomplete = [_pod("a0", index=0, replica="r-a")]
    plan = worker_plan(cluster, group, incomplete, options=DEFAULT_OPTIONS)
    assert [d.name for d in plan.deletions] == ["a0"] and plan.error is None
    assert [c.replica_index for c in plan.creations] == [0, 0, 1, 1]
    pods = [
        _pod("a0", index=0, replica="r-a"),
        _pod("a1", index=0, replica="r-a", phase="Failed"),
        _pod("b0", index=1, replica="r-b"),
        _pod("b1", index=1, replica="r-b"),
    ]
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS, rng=random.Random(1))
    assert {d.name for d in plan.deletions} == {"a0", "a1"}
    assert [c.replica_index for c in plan.creations] == [0, 0] and plan.error is None
    group["scaleStrategy"] = {"workersToDelete": ["b1"]}
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS)
    assert {d.name for d in plan.deletions} == {"a0", "a1", "b0", "b1"}
    assert plan.creations == () and "ScaleStrategy" in (plan.error or "")


def test_multi_host_incomplete_replica_is_replaced_in_the_same_pass() -> None:
    """3 replicas x 4 hosts, one host of replica index 1 deleted from outside: the other three
    hosts are deleted and a whole new replica (index 1, a fresh replica name, hosts 0..3) is
    created in the same pass, with no error (no requeue before the old hosts are gone)."""
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=3, numOfHosts=4)
    pods = [
        _pod(f"{r}{h}", index=i, replica=f"g-{r * 5}")
        for i, r in enumerate("abc")
        for h in range(4)
        if (r, h) != ("b", 2)
    ]
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS, rng=random.Random(3))
    assert [d.name for d in plan.deletions] == ["b0", "b1", "b3"]
    assert {d.reason for d in plan.deletions} == {"cleanup of incomplete multi-host group"}
    assert plan.error is None
    assert [(c.replica_index, c.host_index) for c in plan.creations] == [(1, h) for h in range(4)]
    (fresh,) = {c.replica_name for c in plan.creations}
    assert fresh.startswith("g-") and fresh not in {"g-aaaaa", "g-bbbbb", "g-ccccc"}


def test_multi_host_incomplete_and_requested_replicas_are_deleted_once() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=2, numOfHosts=2, scaleStrategy={"workersToDelete": ["a0"]})
    pods = [_pod("a0", index=0, replica="r-a"), _pod("b0", index=1, replica="r-b")]
    pods.append(_pod("b1", index=1, replica="r-b"))
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS)
    assert [d.name for d in plan.deletions] == ["a0"]
    assert plan.creations == () and "ScaleStrategy" in (plan.error or "")


def test_multi_host_scale_down_removes_whole_replicas() -> None:
    cluster = minimal_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=1, numOfHosts=2)
    pods = [
        _pod("a0", index=0, replica="r-a"),
        _pod("a1", index=0, replica="r-a"),
        _pod("b0", index=1, replica="r-b"),
        _pod("b1", index=1, replica="r-b"),
    ]
    plan = worker_plan(cluster, group, pods, options=DEFAULT_OPTIONS)
    assert [d.name for d in plan.deletions] == ["b0", "b1"]


def test_head_plan() -> None:
    cluster = minimal_cluster()
    head = _pod("h")
    head["metadata"]["labels"]["ray.io/node-type"] = "head"
    assert plan_head(cluster, []).action == "create"
    assert plan_head(cluster, [head]).action == "none"
    head["status"]["phase"] = "Failed"
    assert plan_head(cluster, [head]).action == "delete"
    assert plan_head(cluster, [head, head]).action == "error"
    cluster["metadata"]["annotations"] = {"ray.io/disable-provisioned-head-restart": "true"}
    cluster["status"] = {"conditions": [{"type": "RayClusterProvisioned", "status": "True"}]}
    assert plan_head(cluster, []).action == "skip-restart"
