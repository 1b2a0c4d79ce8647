"""DELETE: finalizers, deletionTimestamp, propagation policies and GC, deletecollection (O7-O9)."""

from __future__ import annotations

import asyncio
from typing import Any

from rayop.testing import eventually

from .kubehttp import MERGE, Kube
from .status_shape import assert_status


async def _eventually_gone(kube: Kube, path: str, *, timeout: float = 30.0) -> None:
    """Watches the object until it is deleted (bounded by ``timeout``)."""
    code, obj = await kube.get(path)
    if code == 404:
        return
    collection, name = path.rsplit("/", 1)
    rv = obj["metadata"]["resourceVersion"]
    async with asyncio.timeout(timeout):
        async with kube.watch(
            collection,
            resourceVersion=rv,
            fieldSelector=f"metadata.name={name}",
            timeoutSeconds=int(timeout),
        ) as (status, events):
            assert status == 200
            async for event in events:
                if event["type"] == "DELETED":
                    return
    raise AssertionError(f"{path} was not deleted")


def _owner_ref(owner: dict[str, Any], *, block: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }


async def test_finalizers_hold_a_deleted_object(kube: Kube, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/configmaps/held"
    await kube.post(
        f"/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
    )
    code, deleting = await kube.delete(path)
    assert code == 200, deleting
    code, obj = await kube.get(path)
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    code, body = await kube.patch(
        path, {"metadata": {"finalizers": ["example.com/hold", "new/one"]}}, MERGE
    )
    assert_status(code, body, 422, "Invalid")
    code, _ = await kube.patch(path, {"data": {"still": "writable"}}, MERGE)
    assert code == 200
    code, done = await kube.patch(path, {"metadata": {"finalizers": None}}, MERGE)
    assert code == 200, done
    code, body = await kube.get(path)
    assert_status(code, body, 404, "NotFound")


async def test_delete_returns_the_object_or_a_success_status(kube: Kube, ns: str) -> None:
    await kube.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "bye"}})
    code, body = await kube.delete(f"/api/v1/namespaces/{ns}/configmaps/bye")
    assert code == 200
    assert body.get("kind") in ("ConfigMap", "Status")
    if body["kind"] == "Status":
        assert body["status"] == "Success"
    code, body = await kube.delete(f"/api/v1/namespaces/{ns}/configmaps/bye")
    assert_status(code, body, 404, "NotFound")


async def test_delete_precondition_on_uid(kube: Kube, ns: str) -> None:
    await kube.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "pre"}})
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "wrong-uid"}}
    code, body = await kube.delete(f"/api/v1/namespaces/{ns}/configmaps/pre", options)
    assert_status(code, body, 409, "Conflict")


async def test_background_propagation_collects_dependents(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    _, owner = await kube.post(cms, {"metadata": {"name": "owner"}})
    await kube.post(
        cms, {"metadata": {"name": "dep", "ownerReferences": [_owner_ref(owner, block=False)]}}
    )
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    code, _ = await kube.delete(f"{cms}/owner", options)
    assert code == 200
    await _eventually_gone(kube, f"{cms}/dep")


async def test_foreground_propagation_waits_for_blocking_dependents(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    _, owner = await kube.post(cms, {"metadata": {"name": "fg-owner"}})
    await kube.post(
        cms,
        {
            "metadata": {
                "name": "fg-dep",
                "finalizers": ["example.com/slow"],
                "ownerReferences": [_owner_ref(owner, block=True)],
            }
        },
    )
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    code, body = await kube.delete(f"{cms}/fg-owner", options)
    assert code == 200, body
    code, owner_now = await kube.get(f"{cms}/fg-owner")
    assert code == 200 and "foregroundDeletion" in owner_now["metadata"]["finalizers"]
    assert owner_now["metadata"]["deletionTimestamp"]

    async def dependent_marked() -> bool:  # the GC marks the dependent deleted
        _, dep = await kube.get(f"{cms}/fg-dep")
        return bool(dep["metadata"].get("deletionTimestamp"))

    await eventually(dependent_marked, timeout=5.0)
    code, owner_now = await kube.get(f"{cms}/fg-owner")
    assert code == 200, "the owner must stay while a blocking dependent exists"
    await kube.patch(f"{cms}/fg-dep", {"metadata": {"finalizers": None}}, MERGE)
    await _eventually_gone(kube, f"{cms}/fg-owner")


async def test_orphan_propagation_keeps_dependents(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    _, owner = await kube.post(cms, {"metadata": {"name": "or-owner"}})
    await kube.post(
        cms, {"metadata": {"name": "or-dep", "ownerReferences": [_owner_ref(owner, block=False)]}}
    )
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}
    await kube.delete(f"{cms}/or-owner", options)
    await _eventually_gone(kube, f"{cms}/or-owner")
    code, dep = await kube.get(f"{cms}/or-dep")
    assert code == 200 and not dep["metadata"].get("ownerReferences")


async def test_deletecollection_with_label_selector(kube: Kube, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    for name, team in (("d1", "a"), ("d2", "a"), ("d3", "b")):
        await kube.post(cms, {"metadata": {"name": name, "labels": {"team": team}}})
    code, body = await kube.request("DELETE", cms, params={"labelSelector": "team=a"})
    assert code == 200, body
    _, left = await kube.get(cms, labelSelector="team")
    assert [i["metadata"]["name"] for i in left["items"]] == ["d3"]
