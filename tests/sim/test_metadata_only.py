"""Metadata-only responses over HTTP (``as=PartialObjectMetadata[List]``): list, get, watch, the
clauses passed over, and the 406s; the client's ``metadata_only`` list against the same plane."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from rayop.kube.resources import CONFIGMAPS
from rayop.testing import open_control_plane

from .server_harness import AUTH, POD, open_harness, pod

META = "g=meta.k8s.io;v=v1"
AS_LIST = f"application/json;as=PartialObjectMetadataList;{META}"
AS_OBJECT = f"application/json;as=PartialObjectMetadata;{META}"
PROTOBUF_LIST = f"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;{META}"


async def test_a_list_answers_each_items_metadata_and_nothing_else() -> None:
    async with open_harness() as h:
        for name in ("a", "b", "c"):
            code, _ = await h.call("POST", POD, pod(name, app="x"))
            assert code == 201
        code, body = await h.call("GET", POD, headers={"Accept": AS_LIST}, limit=2)
        assert code == 200, body
        assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
        assert body["metadata"]["continue"]
        assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
        for item in body["items"]:
            assert set(item) == {"kind", "apiVersion", "metadata"}
            assert (item["kind"], item["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
            assert item["metadata"]["labels"] == {"app": "x"}
        code, rest = await h.call(
            "GET", POD, headers={"Accept": AS_LIST}, limit=2, **{"continue": body["metadata"]["continue"]}
        )
        assert code == 200
        assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
        assert rest["kind"] == "PartialObjectMetadataList"


async def test_client_gos_accept_header_passes_the_protobuf_clause_over_for_json() -> None:
    """client-go's metadata client asks for protobuf first, then JSON, then plain JSON."""
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        accept = f"{PROTOBUF_LIST},{AS_LIST},application/json"
        code, body = await h.call("GET", POD, headers={"Accept": accept})
        assert code == 200
        assert body["kind"] == "PartialObjectMetadataList"
        # Only the protobuf clause: nothing this plane writes is acceptable.
        code, body = await h.call("GET", POD, headers={"Accept": PROTOBUF_LIST})
        assert code == 406, body
        assert body["reason"] == "NotAcceptable"
        # A plain JSON clause ranked first still gets whole objects.
        code, body = await h.call("GET", POD, headers={"Accept": f"application/json,{AS_LIST}"})
        assert (code, body["kind"]) == (200, "PodList")
        assert body["items"][0]["spec"]


async def test_get_answers_partial_object_metadata_and_the_wrong_form_is_refused() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a", app="x"))
        code, body = await h.call("GET", POD + "/a", headers={"Accept": AS_OBJECT})
        assert code == 200
        assert body == {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": body["metadata"],
        }
        assert body["metadata"]["name"] == "a"
        code, body = await h.call("GET", POD + "/a", headers={"Accept": AS_LIST})
        assert code == 406
        assert "is not a list" in body["message"]
        code, body = await h.call("GET", POD, headers={"Accept": AS_OBJECT})
        assert code == 406
        assert "is a list" in body["message"]


async def test_a_watch_streams_partial_object_metadata() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        events: list[dict[str, Any]] = []

        async def watch() -> None:
            headers = {**AUTH, "Accept": AS_OBJECT}
            params = {"watch": "1", "resourceVersion": "0"}
            async with h.client.get(POD, params=params, headers=headers) as r:
                assert r.status == 200
                async for line in r.content:
                    events.append(orjson.loads(line))
                    if len(events) == 2:
                        return

        reader = asyncio.create_task(watch())
        await asyncio.sleep(0.1)
        await h.call("POST", POD, pod("b"))
        await asyncio.wait_for(reader, 5)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
        ]
        assert all(set(e["object"]) == {"kind", "apiVersion", "metadata"} for e in events)
        async with h.client.get(
            POD, params={"watch": "1"}, headers={**AUTH, "Accept": AS_LIST}
        ) as r:
            assert r.status == 406


async def test_the_clients_metadata_only_pages_hold_no_spec_or_data() -> None:
    async with open_control_plane(crds=False) as plane:
        for i in range(3):
            body = {"metadata": {"name": f"cm-{i}"}, "data": {"big": "x" * 1000}}
            await plane.client.create(CONFIGMAPS, body, namespace="default")
        pages = [
            page
            async for page in plane.client.list_pages(
                CONFIGMAPS, namespace="default", limit=2, metadata_only=True
            )
        ]
        items = [item for page in pages for item in page["items"]]
        assert len(pages) == 2
        assert [i["metadata"]["name"] for i in items] == ["cm-0", "cm-1", "cm-2"]
        assert all(set(i) == {"kind", "apiVersion", "metadata"} for i in items)
        assert {i["kind"] for i in items} == {"PartialObjectMetadata"}
        whole = await plane.client.list(CONFIGMAPS, namespace="default")
        assert all(i["data"] for i in whole["items"])
