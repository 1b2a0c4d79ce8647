"""PATCH: merge, JSON and strategic merge patches; optimistic locking in patches (O5)."""

from __future__ import annotations

from .conftest import CustomResource
from .kubehttp import JSON_PATCH, MERGE, STRATEGIC, Kube
from .status_shape import assert_status


async def test_merge_patch_merges_maps_deletes_nulls_replaces_lists(kube: Kube, ns: str) -> None:
    code, _ = await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "mp", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}},
    )
    assert code == 201
    code, patched = await kube.patch(
        f"/api/v1/namespaces/{ns}/configmaps/mp",
        {"metadata": {"labels": {"a": None, "c": "3"}}, "data": {"y": "2"}},
        MERGE,
    )
    assert code == 200, patched
    assert patched["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert patched["data"] == {"x": "1", "y": "2"}


async def test_merge_patch_replaces_lists_whole(kube: Kube, gizmos: CustomResource) -> None:
    await kube.post(gizmos.collection, gizmos.body("tags", size=1, tags=["a", "b"]))
    code, patched = await kube.patch(gizmos.item("tags"), {"spec": {"tags": ["c"]}}, MERGE)
    assert code == 200, patched
    assert patched["spec"]["tags"] == ["c"] and patched["metadata"]["generation"] == 2


async def test_merge_patch_with_stale_resource_version_conflicts(kube: Kube, ns: str) -> None:
    _, cm = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "lock"}})
    rv = cm["metadata"]["resourceVersion"]
    code, _ = await kube.patch(
        f"/api/v1/namespaces/{ns}/configmaps/lock",
        {"metadata": {"resourceVersion": rv}, "data": {"a": "1"}},
        MERGE,
    )
    assert code == 200
    code, body = await kube.patch(
        f"/api/v1/namespaces/{ns}/configmaps/lock",
        {"metadata": {"resourceVersion": rv}, "data": {"a": "2"}},
        MERGE,
    )
    assert_status(code, body, 409, "Conflict")


async def test_json_patch_operations_and_failed_test(kube: Kube, ns: str) -> None:
    await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "jp"}, "data": {"a": "1", "b": "2"}},
    )
    path = f"/api/v1/namespaces/{ns}/configmaps/jp"
    ops = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "remove", "path": "/data/b"},
        {"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
    ]
    code, patched = await kube.patch(path, ops, JSON_PATCH)
    assert code == 200, patched
    assert patched["data"] == {"a": "10"} and patched["metadata"]["labels"] == {"k": "v"}
    code, body = await kube.patch(
        path, [{"op": "test", "path": "/data/a", "value": "nope"}], JSON_PATCH
    )
    assert code == 422 and body["kind"] == "Status", body


async def test_strategic_merge_patch_merges_containers_by_name(kube: Kube, ns: str) -> None:
    pod = {
        "metadata": {"name": "smp"},
        "spec": {
            "containers": [{"name": "a", "image": "img-a:1"}, {"name": "b", "image": "img-b:1"}]
        },
    }
    code, _ = await kube.post(f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 201
    code, patched = await kube.patch(
        f"/api/v1/namespaces/{ns}/pods/smp",
        {
            "spec": {"containers": [{"name": "b", "image": "img-b:2"}]},
            "metadata": {"labels": {"x": "y"}},
        },
        STRATEGIC,
    )
    assert code == 200, patched
    images = {c["name"]: c["image"] for c in patched["spec"]["containers"]}
    assert images == {"a": "img-a:1", "b": "img-b:2"}
    assert patched["metadata"]["labels"] == {"x": "y"}


async def test_patch_of_missing_object_is_not_found(kube: Kube, ns: str) -> None:
    code, body = await kube.patch(f"/api/v1/namespaces/{ns}/configmaps/ghost", {"data": {}}, MERGE)
    assert_status(code, body, 404, "NotFound")
