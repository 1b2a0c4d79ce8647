"""Metadata-only reads (``Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;
v=v1``): a list a page at a time, a get, a watch, and the 406 for the wrong form."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from .conftest import CustomResource
from .kubehttp import Kube
from .status_shape import assert_status

META = "g=meta.k8s.io;v=v1"
AS_LIST = {"Accept": f"application/json;as=PartialObjectMetadataList;{META}"}
AS_OBJECT = {"Accept": f"application/json;as=PartialObjectMetadata;{META}"}


def _is_partial(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and set(item) == {"kind", "apiVersion", "metadata"}
        and (item["kind"], item["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    )


async def test_a_metadata_only_list_pages_through_custom_resources(
    kube: Kube, gizmos: CustomResource
) -> None:
    for name in ("a", "b", "c"):
        body = gizmos.body(name, size=1)
        body["metadata"] = {"name": name, "labels": {"app": "x"}}
        code, obj = await kube.post(gizmos.collection, body)
        assert code == 201, obj
    code, page = await kube.request(
        "GET", gizmos.collection, params={"limit": 2}, headers=AS_LIST
    )
    assert code == 200, page
    assert (page["kind"], page["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert page["metadata"]["resourceVersion"] and page["metadata"]["continue"]
    assert [i["metadata"]["name"] for i in page["items"]] == ["a", "b"]
    assert all(_is_partial(i) for i in page["items"]), page["items"]
    assert all(i["metadata"]["labels"] == {"app": "x"} for i in page["items"])
    params = {"limit": 2, "continue": page["metadata"]["continue"]}
    code, rest = await kube.request("GET", gizmos.collection, params=params, headers=AS_LIST)
    assert code == 200, rest
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
    assert all(_is_partial(i) for i in rest["items"])


async def test_a_metadata_only_get_and_the_wrong_form_is_not_acceptable(
    kube: Kube, gizmos: CustomResource
) -> None:
    code, obj = await kube.post(gizmos.collection, gizmos.body("g", size=1))
    assert code == 201, obj
    code, got = await kube.request("GET", gizmos.item("g"), headers=AS_OBJECT)
    assert code == 200, got
    assert _is_partial(got), got
    assert got["metadata"]["uid"] == obj["metadata"]["uid"]
    code, body = await kube.request("GET", gizmos.collection, headers=AS_OBJECT)
    assert_status(code, body, 406, "NotAcceptable")
    # The list form of one custom resource: kube-apiserver's 500, without a reason.
    code, body = await kube.request("GET", gizmos.item("g"), headers=AS_LIST)
    assert (code, body["message"], body.get("reason")) == (500, "content is not a list", None)
    # The wrong forms of a built-in kind: 406 both ways.
    path = f"/api/v1/namespaces/{gizmos.namespace}/configmaps"
    code, cm = await kube.post(path, {"metadata": {"name": "c"}})
    assert code == 201, cm
    code, body = await kube.request("GET", f"{path}/c", headers=AS_LIST)
    assert_status(code, body, 406, "NotAcceptable")
    code, body = await kube.request("GET", path, headers=AS_OBJECT)
    assert_status(code, body, 406, "NotAcceptable")


async def test_a_metadata_only_watch_streams_partial_objects(kube: Kube, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, first = await kube.post(path, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert code == 201, first
    params = {"watch": "true", "resourceVersion": first["metadata"]["resourceVersion"]}
    async with kube.session.get(
        kube.server + path,
        params=params,
        headers=AS_OBJECT,
        ssl=kube.ssl,
        timeout=aiohttp.ClientTimeout(total=None, sock_read=30),
    ) as resp:
        assert resp.status == 200
        code, _ = await kube.post(path, {"metadata": {"name": "b"}, "data": {"k": "v"}})
        assert code == 201

        async def first_event() -> dict[str, Any]:
            async for line in resp.content:
                if line.strip():
                    event: dict[str, Any] = json.loads(line)
                    if event["type"] != "BOOKMARK":
                        return event
            raise AssertionError("the watch ended before an event")

        event = await asyncio.wait_for(first_event(), 20)
    assert event["type"] == "ADDED"
    assert _is_partial(event["object"]), event
    assert event["object"]["metadata"]["name"] == "b"
