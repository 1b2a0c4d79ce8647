"""The client's verbs send what the API server expects and return plain dicts."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web

from rayop.kube.client import KubeClient, PatchType
from rayop.kube.resources import NAMESPACES, PODS, RAY_CLUSTERS

from .kube_fakes import FakeApiServer, json_response, status_body

PODS_PATH = "/api/v1/namespaces/ns/pods"
RC_PATH = "/apis/ray.io/v1/namespaces/ns/rayclusters"


def pod(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns"}}


def paged_pods(api: FakeApiServer, pages: list[list[str]], *, expire_at: int | None = None) -> None:
    @api.route("GET", PODS_PATH)
    async def handler(request: web.Request) -> web.Response:
        token = request.query.get("continue")
        if token is not None and expire_at is not None and int(token) >= expire_at:
            return json_response(status_body(410, "Expired", "continue token expired"), 410)
        if "limit" not in request.query:  # an unpaged list: everything at once
            names = [n for page in pages for n in page]
            return json_response(
                {
                    "kind": "PodList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "99"},
                    "items": [pod(n) for n in names],
                }
            )
        index = int(token or 0)
        meta: dict[str, str] = {"resourceVersion": "42"}
        if index + 1 < len(pages):
            meta["continue"] = str(index + 1)
        body = {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": meta,
            "items": [pod(n) for n in pages[index]],
        }
        return json_response(body)


async def test_list_follows_continue_tokens_and_merges_pages(
    api: FakeApiServer, client: KubeClient
) -> None:
    paged_pods(api, [["a", "b"], ["c", "d"], ["e"]])
    result = await client.list(PODS, namespace="ns", label_selector="app=x", limit=2)
    assert [p["metadata"]["name"] for p in result["items"]] == ["a", "b", "c", "d", "e"]
    assert result["metadata"] == {"resourceVersion": "42"}
    assert result["kind"] == "PodList"
    assert all(p["kind"] == "Pod" and p["apiVersion"] == "v1" for p in result["items"])
    queries = [r.query for r in api.requests]
    assert queries[0] == {"labelSelector": "app=x", "limit": "2"}
    assert queries[1] == {"labelSelector": "app=x", "limit": "2", "continue": "1"}
    assert len(queries) == 3


async def test_expired_continue_token_falls_back_to_one_unpaged_list(
    api: FakeApiServer, client: KubeClient
) -> None:
    paged_pods(api, [["a"], ["b"], ["c"]], expire_at=2)
    result = await client.list(PODS, namespace="ns", limit=1)
    assert [p["metadata"]["name"] for p in result["items"]] == ["a", "b", "c"]
    assert result["metadata"]["resourceVersion"] == "99"
    assert "limit" not in api.requests[-1].query


async def test_list_without_limit_and_across_namespaces(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("GET", "/api/v1/pods")
    async def handler(request: web.Request) -> web.Response:
        assert dict(request.query) == {"resourceVersion": "0"}
        return json_response(
            {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": [pod("x")]}
        )

    result = await client.list(PODS, limit=None, resource_version="0")
    assert len(result["items"]) == 1


async def test_create_sets_type_fields_and_sends_json(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("POST", RC_PATH)
    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        body["metadata"]["uid"] = "u1"
        return json_response(body, 201)

    created = await client.create(
        RAY_CLUSTERS, {"metadata": {"name": "c"}, "spec": {}}, namespace="ns"
    )
    assert created["metadata"]["uid"] == "u1"
    sent = api.requests[0]
    assert sent.headers["Content-Type"] == "application/json"
    assert sent.headers["Authorization"] == "Bearer t0k"
    assert sent.headers["User-Agent"].startswith("rayop/")
    assert orjson.loads(sent.body)["apiVersion"] == "ray.io/v1"
    assert orjson.loads(sent.body)["kind"] == "RayCluster"


async def test_update_and_update_status_put_to_object_and_status(
    api: FakeApiServer, client: KubeClient
) -> None:
    async def echo(request: web.Request) -> web.Response:
        return json_response(await request.json())

    api.routes[("PUT", f"{RC_PATH}/c")] = echo
    api.routes[("PUT", f"{RC_PATH}/c/status")] = echo
    obj = {
        "metadata": {"name": "c", "namespace": "ns", "resourceVersion": "5"},
        "status": {"state": "ready"},
    }
    await client.update(RAY_CLUSTERS, obj)
    await client.update_status(RAY_CLUSTERS, obj)
    assert [r.path for r in api.requests] == [f"{RC_PATH}/c", f"{RC_PATH}/c/status"]


@pytest.mark.parametrize(
    ("patch_type", "content_type", "body"),
    [
        ("merge", "application/merge-patch+json", {"spec": {"suspend": True}}),
        (
            "json",
            "application/json-patch+json",
            [{"op": "replace", "path": "/spec/suspend", "value": True}],
        ),
        (
            "strategic",
            "application/strategic-merge-patch+json",
            {"metadata": {"labels": {"a": "b"}}},
        ),
    ],
)
async def test_patch_types_use_their_content_type(
    api: FakeApiServer, client: KubeClient, patch_type: PatchType, content_type: str, body: object
) -> None:
    @api.route("PATCH", f"{RC_PATH}/c/status")
    async def handler(request: web.Request) -> web.Response:
        return json_response({"metadata": {"name": "c"}})

    await client.patch(
        RAY_CLUSTERS, "c", body, namespace="ns", patch_type=patch_type, subresource="status"
    )
    sent = api.requests[0]
    assert sent.headers["Content-Type"] == content_type
    assert orjson.loads(sent.body) == body


async def test_delete_sends_delete_options(api: FakeApiServer, client: KubeClient) -> None:
    @api.route("DELETE", f"{PODS_PATH}/p")
    async def handler(request: web.Request) -> web.Response:
        return json_response({"kind": "Status", "status": "Success"})

    result = await client.delete(
        PODS,
        "p",
        namespace="ns",
        propagation_policy="Foreground",
        grace_period_seconds=0,
        preconditions={"uid": "u1", "resourceVersion": "9"},
    )
    assert result["status"] == "Success"
    assert orjson.loads(api.requests[0].body) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u1", "resourceVersion": "9"},
    }
    await client.delete(PODS, "p", namespace="ns")
    assert api.requests[1].body == b""


async def test_delete_collection_uses_selector_on_the_collection(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("DELETE", PODS_PATH)
    async def handler(request: web.Request) -> web.Response:
        return json_response({"kind": "PodList", "items": []})

    await client.delete_collection(PODS, namespace="ns", label_selector="ray.io/cluster=c")
    assert api.requests[0].query == {"labelSelector": "ray.io/cluster=c"}


async def test_cluster_scoped_resources_ignore_namespaces(
    api: FakeApiServer, client: KubeClient
) -> None:
    @api.route("GET", "/api/v1/namespaces/default")
    async def handler(request: web.Request) -> web.Response:
        return json_response({"metadata": {"name": "default"}})

    assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"


async def test_namespaced_get_without_namespace_is_refused(client: KubeClient) -> None:
    with pytest.raises(ValueError, match="namespace"):
        await client.get(PODS, "p")


async def test_raw_request_returns_status_and_body_without_raising(
    api: FakeApiServer, client: KubeClient
) -> None:
    path = "/api/v1/namespaces/ns/services/head-svc:8265/proxy/api/jobs/"

    @api.route("POST", path)
    async def handler(request: web.Request) -> web.Response:
        assert request.query["x"] == "1"
        assert await request.json() == {"entrypoint": "python x.py"}
        return web.Response(text="job submitted", status=202)

    status, body = await client.request(
        "POST", path, params={"x": "1"}, json={"entrypoint": "python x.py"}, timeout=2.0
    )
    assert (status, body) == (202, b"job submitted")
    missing_status, missing_body = await client.request("GET", "/missing")
    assert missing_status == 404
    assert orjson.loads(missing_body)["reason"] == "NotFound"


async def test_a_body_over_1_mib_is_sent_whole_without_aiohttp_s_warning(
    api: FakeApiServer, client: KubeClient
) -> None:
    """aiohttp warns (ResourceWarning, a test failure here) when handed more than 1 MiB of bytes
    at once: an object with a big annotation, written by a user or in the operator's status
    updates, is sent as a stream instead, with its length."""

    @api.route("POST", RC_PATH)
    async def handler(request: web.Request) -> web.Response:
        return json_response(await request.json(), 201)

    big = {"metadata": {"name": "c", "annotations": {"a": "x" * (2 * 1024 * 1024)}}, "spec": {}}
    created = await client.create(RAY_CLUSTERS, big, namespace="ns")
    assert created["metadata"]["annotations"] == big["metadata"]["annotations"]
    assert int(api.requests[0].headers["Content-Length"]) == len(api.requests[0].body)
