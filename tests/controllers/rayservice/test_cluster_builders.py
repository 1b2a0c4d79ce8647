"""Pure builders of a RayService's clusters: hash, upgrade rules, the RayCluster object."""

from __future__ import annotations

import copy
import random
from typing import Any

from rayop.api.rayservice import RayService
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.rayservice import cluster_builders as cs

IMAGE = "rayproject/ray:2.52.0"


def _service(**spec: Any) -> dict[str, Any]:
    group = {
        "groupName": "small",
        "replicas": 1,
        "minReplicas": 0,
        "maxReplicas": 5,
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "w", "image": IMAGE}]}},
    }
    return {
        "metadata": {
            "name": "svc",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"team": "a"},
            "annotations": {"note": "x"},
        },
        "spec": {
            "rayClusterConfig": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "h", "image": IMAGE}]}},
                },
                "workerGroupSpecs": [group],
            },
            **spec,
        },
    }


def _build(svc: dict[str, Any], name: str = "svc-abcde") -> dict[str, Any]:
    return cs.build_ray_cluster(RayService.model_validate(svc), cs.goal_spec(svc), name)


def _zero_downtime(svc: dict[str, Any], options: OperatorOptions) -> bool:
    return cs.zero_downtime_enabled(RayService.model_validate(svc).spec, options)


def test_hash_ignores_replicas_and_workers_to_delete_but_not_images() -> None:
    svc = _service()
    goal = cs.goal_spec(svc)
    scaled = copy.deepcopy(dict(goal))
    scaled["workerGroupSpecs"][0]["replicas"] = 4
    scaled["workerGroupSpecs"][0]["scaleStrategy"] = {"workersToDelete": ["p1"]}
    assert cs.spec_hash(scaled) == cs.spec_hash(goal)
    changed = copy.deepcopy(dict(goal))
    changed["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "other"
    assert cs.spec_hash(changed) != cs.spec_hash(goal)


def test_built_cluster_carries_kuberay_labels_annotations_and_owner() -> None:
    svc = _service()
    cluster = _build(svc)
    meta = cluster["metadata"]
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
    }
    annotations = meta["annotations"]
    assert annotations["note"] == "x"
    assert "ray.io/enable-serve-service" not in annotations
    assert annotations["ray.io/num-worker-groups"] == "1"
    assert annotations["ray.io/hash-without-replicas-and-workers-to-delete"] == cs.spec_hash(
        cs.goal_spec(svc)
    )
    (owner,) = meta["ownerReferences"]
    assert owner["kind"] == "RayService" and owner["uid"] == "u-1" and owner["controller"]
    assert cluster["spec"] == cs.goal_spec(svc)
    assert cs.matches_goal(cluster, cs.goal_spec(svc))


def test_appended_worker_group_is_an_in_place_update_not_an_upgrade() -> None:
    svc = _service()
    cluster = _build(svc)
    grown = copy.deepcopy(svc)
    extra = copy.deepcopy(grown["spec"]["rayClusterConfig"]["workerGroupSpecs"][0])
    extra["groupName"] = "extra"
    grown["spec"]["rayClusterConfig"]["workerGroupSpecs"].append(extra)
    goal = cs.goal_spec(grown)
    assert not cs.matches_goal(cluster, goal)
    assert cs.only_appended_worker_groups(cluster, goal)
    cluster["spec"]["suspend"] = True
    cluster["metadata"]["labels"]["left-by-someone"] = "x"
    cluster["metadata"]["annotations"]["left-by-someone"] = "x"
    updated = cs.updated_in_place(cluster, RayService.model_validate(grown), goal)
    # labels and annotations are those of a cluster built afresh, as KubeRay replaces them
    fresh = cs.build_ray_cluster(
        RayService.model_validate(grown), goal, cluster["metadata"]["name"]
    )
    assert updated["metadata"]["labels"] == fresh["metadata"]["labels"]
    assert updated["metadata"]["annotations"] == fresh["metadata"]["annotations"]
    assert [g["groupName"] for g in updated["spec"]["workerGroupSpecs"]] == ["small", "extra"]
    assert updated["spec"]["suspend"] is True
    assert cs.matches_goal(updated, goal)
    edited = copy.deepcopy(grown)
    edited["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["rayStartParams"] = {"x": "1"}
    assert not cs.only_appended_worker_groups(cluster, cs.goal_spec(edited))


def test_zero_downtime_follows_upgrade_strategy_then_the_env_gate() -> None:
    on, off = OperatorOptions(), OperatorOptions(enable_zero_downtime=False)
    assert _zero_downtime(_service(), on)
    assert not _zero_downtime(_service(), off)
    assert _zero_downtime(_service(upgradeStrategy={"type": "NewCluster"}), off)
    assert not _zero_downtime(_service(upgradeStrategy={"type": "None"}), on)


def test_cluster_names_are_service_name_and_five_random_chars() -> None:
    rng = random.Random(1)
    names = {cs.new_cluster_name("svc", rng) for _ in range(50)}
    assert len(names) == 50
    assert all(n.startswith("svc-") and len(n) == 9 for n in names)
