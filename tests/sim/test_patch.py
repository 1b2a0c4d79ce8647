"""PATCH: merge, JSON and strategic merge semantics, unit and over HTTP."""

from __future__ import annotations

import orjson
import pytest

from rayop.sim.apiserver.patch import (
    JSON_PATCH,
    apply_patch,
    json_merge_patch,
    strategic_merge_patch,
)
from rayop.sim.machinery.errors import StatusError

from .server_harness import POD, open_harness, pod


def test_merge_patch_replaces_lists_and_null_deletes() -> None:
    orig = {"a": {"b": 1, "c": 2}, "l": [1, 2]}
    assert json_merge_patch(orig, {"a": {"b": None, "d": 3}, "l": [3]}) == {
        "a": {"c": 2, "d": 3},
        "l": [3],
    }
    assert orig == {"a": {"b": 1, "c": 2}, "l": [1, 2]}


def test_strategic_merge_merges_lists_by_key() -> None:
    orig = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "x",
                    "env": [{"name": "E1", "value": "1"}],
                    "ports": [{"containerPort": 80, "name": "http"}],
                },
                {"name": "b", "image": "y"},
            ],
            "volumes": [{"name": "v1"}],
        },
        "metadata": {"finalizers": ["f1"]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "x2",
                    "env": [{"name": "E2", "value": "2"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                },
                {"name": "b", "$patch": "delete"},
                {"name": "c", "image": "z"},
            ],
        },
        "metadata": {"finalizers": ["f2"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    out = strategic_merge_patch(orig, patch)
    cs = out["spec"]["containers"]
    assert [c["name"] for c in cs] == ["a", "c"]
    assert cs[0]["image"] == "x2" and [e["name"] for e in cs[0]["env"]] == ["E1", "E2"]
    assert cs[0]["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert out["spec"]["volumes"] == [{"name": "v1"}]
    assert out["metadata"]["finalizers"] == ["f1", "f2"]
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    out = strategic_merge_patch(orig, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}})
    assert out["metadata"]["finalizers"] == []


async def test_patch_over_http_all_three_types_and_optimistic_lock() -> None:
    async with open_harness() as h:
        _, p = await h.call("POST", POD, pod("a", app="x"))
        code, p1 = await h.call(
            "PATCH",
            POD + "/a",
            {"metadata": {"labels": {"b": "y"}}},
            ctype="application/merge-patch+json",
        )
        assert code == 200 and p1["metadata"]["labels"] == {"app": "x", "b": "y"}
        code, p2 = await h.call(
            "PATCH",
            POD + "/a",
            orjson.dumps([{"op": "replace", "path": "/metadata/labels/app", "value": "z"}]),
            ctype="application/json-patch+json",
        )
        assert code == 200 and p2["metadata"]["labels"]["app"] == "z"
        code, p3 = await h.call(
            "PATCH",
            POD + "/a",
            {"spec": {"containers": [{"name": "c", "image": "new"}]}},
            ctype="application/strategic-merge-patch+json",
        )
        assert code == 200 and p3["spec"]["containers"][0]["image"] == "new"
        assert p3["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
        code, err = await h.call(
            "PATCH",
            POD + "/a",
            {
                "metadata": {
                    "resourceVersion": p["metadata"]["resourceVersion"],
                    "labels": {"q": "1"},
                }
            },
            ctype="application/merge-patch+json",
        )
        assert code == 409 and err["reason"] == "Conflict"
        code, err = await h.call(
            "PATCH",
            POD + "/a",
            orjson.dumps([{"op": "test", "path": "/metadata/name", "value": "b"}]),
            ctype="application/json-patch+json",
        )
        assert code == 422
        code, err = await h.call("PATCH", POD + "/a", {}, ctype="text/plain")
        assert code == 415 and err["reason"] == "UnsupportedMediaType"
        code, st = await h.call(
            "PATCH",
            POD + "/a/status",
            {"status": {"phase": "Running"}, "spec": {"x": 1}},
            ctype="application/merge-patch+json",
        )
        assert code == 200 and st["status"]["phase"] == "Running" and "x" not in st["spec"]
        code, _ = await h.call("PATCH", POD + "/nope", {}, ctype="application/merge-patch+json")
        assert code == 404
        assert h.audit.count(verb="patch", resource="pods", code=200) == 4


def test_a_json_patch_replace_of_a_missing_member_sets_it_as_kubernetes_does() -> None:
    """kube-apiserver (evanphx/json-patch v4) lets ``replace`` set a missing object member; the
    Ray autoscaler's ``workersToDelete`` patch of a group with no scaleStrategy needs it."""
    cluster = {"spec": {"workerGroupSpecs": [{"groupName": "small", "replicas": 1}]}}
    ops = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 0},
        {
            "op": "replace",
            "path": "/spec/workerGroupSpecs/0/scaleStrategy",
            "value": {"workersToDelete": ["w-1"]},
        },
    ]
    out = apply_patch(JSON_PATCH, cluster, orjson.dumps(ops), custom=True)
    assert out["spec"]["workerGroupSpecs"][0] == {
        "groupName": "small",
        "replicas": 0,
        "scaleStrategy": {"workersToDelete": ["w-1"]},
    }
    assert "scaleStrategy" not in cluster["spec"]["workerGroupSpecs"][0]
    for refused in (
        {"op": "replace", "path": "/spec/workerGroupSpecs/1", "value": {}},
        {"op": "replace", "path": "/spec/nothing/here", "value": 1},
        {"op": "remove", "path": "/spec/missing"},
    ):
        with pytest.raises(StatusError) as caught:
            apply_patch(JSON_PATCH, cluster, orjson.dumps([refused]), custom=True)
        assert caught.value.code == 422, refused
