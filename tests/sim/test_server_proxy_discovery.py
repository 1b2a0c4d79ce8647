"""Services proxy subresource and discovery documents."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from .server_harness import open_harness

SVC = "/api/v1/namespaces/default/services"


async def test_services_proxy_forwards_to_resolved_base_url() -> None:
    async def echo(request: web.Request) -> web.Response:
        return web.json_response(
            {"path": request.path, "q": request.query_string, "body": (await request.text())}
        )

    upstream_app = web.Application()
    upstream_app.router.add_route("*", "/{tail:.*}", echo)
    upstream = TestServer(upstream_app)
    await upstream.start_server()
    seen: list[tuple[str, str, str]] = []

    def resolve(ns: str, svc: str, port: str) -> str | None:
        seen.append((ns, svc, port))
        return str(upstream.make_url("/")) if svc == "head" else None

    try:
        async with open_harness(proxy_resolver=resolve) as h:
            for name in ("head", "other"):
                await h.call(
                    "POST", SVC, {"metadata": {"name": name}, "spec": {"ports": [{"port": 8265}]}}
                )
            code, body = await h.call(
                "POST", SVC + "/head:8265/proxy/api/jobs/", b'{"entrypoint":"x"}', a="1"
            )
            assert code == 200
            assert body == {"path": "/api/jobs/", "q": "a=1", "body": '{"entrypoint":"x"}'}
            assert seen[0] == ("default", "head", "8265")
            code, err = await h.call("GET", SVC + "/other/proxy/")
            assert code == 503 and err["reason"] == "ServiceUnavailable"
            code, err = await h.call("GET", SVC + "/missing:80/proxy/x")
            assert code == 404
    finally:
        await upstream.close()


async def test_discovery_documents() -> None:
    async with open_harness() as h:
        code, v = await h.call("GET", "/version")
        assert code == 200 and v["major"] == "1"
        _, api = await h.call("GET", "/api")
        assert api["versions"] == ["v1"]
        _, core = await h.call("GET", "/api/v1")
        by_name: dict[str, Any] = {r["name"]: r for r in core["resources"]}
        assert by_name["pods"]["namespaced"] and "po" in by_name["pods"]["shortNames"]
        assert "pods/status" in by_name and "services/proxy" in by_name
        assert not by_name["namespaces"]["namespaced"]
        _, groups = await h.call("GET", "/apis")
        names = {g["name"] for g in groups["groups"]}
        assert {
            "batch",
            "coordination.k8s.io",
            "discovery.k8s.io",
            "events.k8s.io",
            "rbac.authorization.k8s.io",
            "networking.k8s.io",
            "apiextensions.k8s.io",
        } <= names
        _, batch = await h.call("GET", "/apis/batch/v1")
        assert [r["name"] for r in batch["resources"]] == ["jobs", "jobs/status"]
        _, idx = await h.call("GET", "/openapi/v3")
        assert "api/v1" in idx["paths"] and "apis/batch/v1" in idx["paths"]
        _, doc = await h.call("GET", "/openapi/v3/api/v1")
        op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
        assert op["x-kubernetes-group-version-kind"]["kind"] == "Pod"
