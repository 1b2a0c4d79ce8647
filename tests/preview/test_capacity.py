"""The room kube-scheduler counts, and where ``rayop preview -f`` places new pods
(``rayop.preview.capacity``), on Node and Pod objects alone."""

from __future__ import annotations

from typing import Any

from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import PODS, RAY_CLUSTERS
from rayop.preview.capacity import Room, new_pods, place
from rayop.preview.recording_client import Write

Obj = dict[str, Any]


def _node(name: str, cpu: str = "4", memory: str = "8Gi", **spec: Any) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": allocatable}}


def _pod(name: str, cpu: str, node: str = "", phase: str = "Running", **spec: Any) -> Obj:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    body: Obj = {"containers": [container], **spec}
    if node:
        body["nodeName"] = node
    return {"metadata": {"namespace": "ns", "name": name}, "spec": body, "status": {"phase": phase}}


def test_the_room_counts_bound_unfinished_pods_only() -> None:
    room = Room.of(
        [_node("a"), _node("b")],
        [
            _pod("running", "3", "a"),
            _pod("done", "3", "a", phase="Succeeded"),
            _pod("pending", "3"),
        ],
    )
    (a, b) = room.nodes
    assert a.pods == 1 and a.requested["cpu"] == 3 and b.pods == 0
    placement = place(room, [], [("p", _pod("p", "2"))])
    assert placement.placed == {"p": "b"}  # the node with the most room left
    room.free("ns", "running")
    assert a.pods == 0 and a.requested["cpu"] == 0


def test_a_deleted_pod_gives_its_room_first() -> None:
    room = Room.of([_node("a", cpu="2")], [_pod("old", "2", "a")])
    placement = place(room, [("ns", "old")], [("new", _pod("new", "2"))])
    assert placement.fits and placement.placed == {"new": "a"}


def test_taints_and_cordons_refuse_as_kube_scheduler_says_and_the_shortage_is_named() -> None:
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    room = Room.of([_node("tainted", taints=[taint]), _node("cordoned", unschedulable=True)], [])
    placement = place(room, [], [("p", _pod("p", "1"))])
    assert placement.unplaced["p"].startswith(
        "0/2 nodes are available: 1 node(s) had untolerated taint {gpu: true}, "
        "1 node(s) were unschedulable."
    ), placement
    assert placement.short == []  # the tainted node has room: nothing is short in total
    tolerating = _pod("t", "1", tolerations=[{"key": "gpu", "operator": "Exists"}])
    assert place(room, [], [("t", tolerating)]).placed == {"t": "tainted"}
    wide = place(room, [], [("w", _pod("w", "5"))])
    assert wide.short == ["cpu: needed 5, free 3"], wide  # the cordoned node does not count
    assert wide.lines()[-1] == "room: short of cpu: needed 5, free 3"


def test_a_new_clusters_pods_are_built_as_the_operator_builds_them() -> None:
    group = {
        "groupName": "g",
        "replicas": 2,
        "minReplicas": 0,
        "maxReplicas": 5,
        "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}},
    }
    head = {"template": {"spec": {"containers": [{"name": "h", "image": "ray"}]}}}
    cluster = {
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": head, "workerGroupSpecs": [group]},
    }
    pod = {"metadata": {"generateName": "c-g-worker-"}, "spec": {"containers": []}}
    writes = [
        Write("create", RAY_CLUSTERS, "ns", "c", None, cluster),
        Write("create", PODS, "ns", "", None, pod),
        Write("delete", PODS, "ns", "gone", None, None),
    ]
    labels = [label for label, _ in new_pods(writes, OperatorOptions())]
    assert labels[0].startswith("ns/c-head")
    assert labels[1:3] == ["ns/c-g-worker-* (1/3)", "ns/c-g-worker-* (2/3)"], labels
    assert labels[3] == "ns/c-g-worker-* (3/3)"
