"""List: label and field selectors, limit/continue pagination, resourceVersionMatch (W2, W3)."""

from __future__ import annotations

from .kubehttp import Kube
from .status_shape import assert_status


async def _cms(kube: Kube, ns: str, labels: dict[str, dict[str, str]]) -> None:
    for name, lab in labels.items():
        code, body = await kube.post(
            f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name, "labels": lab}}
        )
        assert code == 201, body


async def _names(kube: Kube, path: str, **params: str) -> list[str]:
    code, body = await kube.get(path, **params)
    assert code == 200, body
    return sorted(i["metadata"]["name"] for i in body["items"])


async def test_label_selector_operators(kube: Kube, ns: str) -> None:
    await _cms(
        kube,
        ns,
        {
            "a": {"tier": "web", "env": "prod"},
            "b": {"tier": "db", "env": "prod"},
            "c": {"tier": "web"},
            "d": {},
        },
    )
    path = f"/api/v1/namespaces/{ns}/configmaps"
    cases = {
        "tier=web": ["a", "c"],
        "tier==web": ["a", "c"],
        "tier!=web": ["b", "d"],
        "tier in (web,db)": ["a", "b", "c"],
        "tier notin (web)": ["b", "d"],
        "env": ["a", "b"],
        "!env": ["c", "d"],
        "tier=web,env=prod": ["a"],
    }
    for selector, want in cases.items():
        assert await _names(kube, path, labelSelector=selector) == want, selector


async def test_bad_label_selector_is_bad_request(kube: Kube, ns: str) -> None:
    code, body = await kube.get(f"/api/v1/namespaces/{ns}/configmaps", labelSelector="a in (b")
    assert_status(code, body, 400, "BadRequest")


async def test_field_selectors(kube: Kube, ns: str) -> None:
    await _cms(kube, ns, {"x": {}, "y": {}})
    path = f"/api/v1/namespaces/{ns}/configmaps"
    assert await _names(kube, path, fieldSelector="metadata.name=x") == ["x"]
    assert await _names(kube, path, fieldSelector="metadata.name!=x") == ["y"]
    all_ns = await _names(kube, "/api/v1/configmaps", fieldSelector=f"metadata.namespace={ns}")
    assert all_ns == ["x", "y"]
    pod = {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "some-node", "containers": [{"name": "c", "image": "x"}]},
    }
    code, body = await kube.post(f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 201, body
    pods = f"/api/v1/namespaces/{ns}/pods"
    assert await _names(kube, pods, fieldSelector="spec.nodeName=some-node") == ["p"]
    assert await _names(kube, pods, fieldSelector="spec.nodeName=other-node") == []


async def test_pagination_is_a_consistent_snapshot(kube: Kube, ns: str) -> None:
    await _cms(kube, ns, {f"p{i}": {"page": "yes"} for i in range(7)})
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, first = await kube.get(path, limit=3, labelSelector="page=yes")
    assert code == 200 and len(first["items"]) == 3
    token = first["metadata"]["continue"]
    assert token and "remainingItemCount" not in first["metadata"]  # unknown with a selector
    await _cms(kube, ns, {"p9": {"page": "yes"}})  # created after the first page
    names = [i["metadata"]["name"] for i in first["items"]]
    while token:
        code, page = await kube.get(path, limit=3, labelSelector="page=yes", **{"continue": token})
        assert code == 200, page
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert names == [f"p{i}" for i in range(7)]


async def test_invalid_continue_token_is_rejected(kube: Kube, ns: str) -> None:
    code, body = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps", limit=1, **{"continue": "not-a-token"}
    )
    assert code in (400, 410), body
    assert body["kind"] == "Status" and body["reason"] in ("BadRequest", "Expired")


async def test_exact_list_at_a_too_old_version_is_gone(kube: Kube, ns: str) -> None:
    code, body = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps", resourceVersion="1", resourceVersionMatch="Exact"
    )
    assert code == 410, body
    assert body["kind"] == "Status" and body["reason"] in ("Expired", "Gone")
    code, body = await kube.get(f"/api/v1/namespaces/{ns}/configmaps", resourceVersion="0")
    assert code == 200 and body["items"] == []
