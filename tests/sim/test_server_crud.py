"""HTTP verbs of the API server: auth, create/get/list/update/status/delete, Status errors."""

from __future__ import annotations

from typing import Any

from .server_harness import CM, POD, open_harness, pod


async def test_unauthenticated_requests_get_401_status() -> None:
    async with open_harness() as h:
        async with h.client.get(POD) as r:
            body = await r.json()
        assert r.status == 401
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized"
        code, _ = await h.call("GET", POD, headers={"Authorization": "Bearer wrong"})
        assert code == 401


async def test_create_get_conflict_and_not_found_statuses() -> None:
    async with open_harness() as h:
        code, p = await h.call("POST", POD, pod("a", app="x"))
        assert code == 201 and p["metadata"]["resourceVersion"]
        code, err = await h.call("POST", POD, pod("a"))
        assert code == 409 and err["reason"] == "AlreadyExists"
        assert err["message"] == 'pods "a" already exists'
        assert err["details"] == {"name": "a", "kind": "pods"}
        code, err = await h.call("GET", POD + "/nope")
        assert (code, err["reason"], err["status"]) == (404, "NotFound", "Failure")
        assert err["message"] == 'pods "nope" not found'
        code, got = await h.call("GET", POD + "/a")
        assert code == 200 and got["metadata"]["uid"] == p["metadata"]["uid"]
        code, err = await h.call("GET", "/api/v1/namespaces/default/widgets")
        assert code == 404 and err["kind"] == "Status"
        for path in ("/nothing/here", "/apis/nope.io/v1"):
            code, err = await h.call("GET", path)
            assert code == 404 and err["kind"] == "Status" and err["reason"] == "NotFound"


async def test_update_stale_rv_conflicts_and_status_subresource() -> None:
    async with open_harness() as h:
        _, p = await h.call("POST", POD, pod("a"))
        p["metadata"]["labels"] = {"v": "1"}
        code, p2 = await h.call("PUT", POD + "/a", p)
        assert code == 200 and p2["metadata"]["labels"] == {"v": "1"}
        code, err = await h.call("PUT", POD + "/a", p)
        assert code == 409 and err["reason"] == "Conflict"
        assert "the object has been modified" in err["message"]
        p2["status"] = {"phase": "Running"}
        code, p3 = await h.call("PUT", POD + "/a/status", p2)
        assert code == 200 and p3["status"]["phase"] == "Running"
        assert h.audit.count(verb="update", resource="pods", subresource="status", code=200) == 1
        assert h.audit.count(verb="update", code=409) == 1


async def test_list_selectors_pagination_and_rv_semantics() -> None:
    async with open_harness() as h:
        for i in range(7):
            await h.call("POST", POD, pod(f"p{i}", app="x" if i % 2 else "y", tier=str(i)))
        code, lst = await h.call("GET", POD, labelSelector="app=x")
        assert code == 200 and lst["kind"] == "PodList"
        assert [i["metadata"]["name"] for i in lst["items"]] == ["p1", "p3", "p5"]
        _, lst = await h.call("GET", POD, labelSelector="app in (x,y),tier notin (0,1)")
        assert len(lst["items"]) == 5
        _, lst = await h.call("GET", POD, labelSelector="!app")
        assert lst["items"] == []
        _, lst = await h.call("GET", POD, fieldSelector="metadata.name=p2")
        assert [i["metadata"]["name"] for i in lst["items"]] == ["p2"]
        _, lst = await h.call("GET", POD, fieldSelector="status.phase!=Pending")
        assert lst["items"] == []
        code, _ = await h.call("GET", POD, labelSelector="a in (")
        assert code == 400
        # pages are served at the first page's RV even when objects change in between
        _, page1 = await h.call("GET", POD, limit=3)
        rv = page1["metadata"]["resourceVersion"]
        assert len(page1["items"]) == 3 and page1["metadata"]["remainingItemCount"] == 4
        await h.call("POST", POD, pod("zz"))
        names = [i["metadata"]["name"] for i in page1["items"]]
        token = page1["metadata"]["continue"]
        while token:
            _, page = await h.call("GET", POD, limit=3, **{"continue": token})
            assert page["metadata"]["resourceVersion"] == rv
            names += [i["metadata"]["name"] for i in page["items"]]
            token = page["metadata"].get("continue", "")
        assert names == [f"p{i}" for i in range(7)]
        expired: dict[str, Any] = {"continue": "eyJzIjo5OTksIm8iOjEsInJ2IjoxfQ=="}
        code, err = await h.call("GET", POD, **expired)
        assert code == 410 and err["reason"] == "Expired"
        current = int(rv) + 1
        code, _ = await h.call("GET", POD, resourceVersion=str(current + 100))
        assert code == 504
        code, err = await h.call("GET", POD, resourceVersion="1", resourceVersionMatch="Exact")
        assert code == 410
        code, _ = await h.call(
            "GET", POD, resourceVersion=str(current), resourceVersionMatch="Exact"
        )
        assert code == 200
        code, all_ns = await h.call("GET", "/api/v1/pods")
        assert code == 200 and len(all_ns["items"]) == 8


async def test_delete_options_finalizers_and_deletecollection() -> None:
    async with open_harness() as h:
        await h.call("POST", CM, {"metadata": {"name": "f", "finalizers": ["example.com/x"]}})
        code, obj = await h.call("DELETE", CM + "/f", {"kind": "DeleteOptions", "apiVersion": "v1"})
        assert code == 200 and obj["metadata"]["deletionTimestamp"]
        code, obj = await h.call("GET", CM + "/f")
        assert code == 200
        obj["metadata"]["finalizers"] = []
        code, _ = await h.call("PUT", CM + "/f", obj)
        assert code == 200
        code, _ = await h.call("GET", CM + "/f")
        assert code == 404
        await h.call("POST", CM, {"metadata": {"name": "g"}})
        code, err = await h.call("DELETE", CM + "/g", {"preconditions": {"uid": "not-the-uid"}})
        assert code == 409 and "Precondition failed: UID" in err["message"]
        code, obj = await h.call("DELETE", CM + "/g", propagationPolicy="Foreground")
        assert code == 200 and obj["metadata"]["finalizers"] == ["foregroundDeletion"]
        for i in range(3):
            await h.call("POST", CM, {"metadata": {"name": f"c{i}", "labels": {"del": "yes"}}})
        code, _ = await h.call("DELETE", CM, labelSelector="del=yes")
        assert code == 200
        _, lst = await h.call("GET", CM)
        assert [i["metadata"]["name"] for i in lst["items"]] == ["g"]
        assert h.audit.count(verb="deletecollection", resource="configmaps") == 1


async def test_table_output_for_pods_and_default() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        code, t = await h.call("GET", POD, headers={"Accept": accept})
        assert code == 200 and t["kind"] == "Table"
        assert [c["name"] for c in t["columnDefinitions"]][:5] == [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
        ]
        assert t["rows"][0]["cells"][:4] == ["a", "0/1", "Pending", 0]
        assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
        code, t = await h.call("GET", "/api/v1/namespaces", headers={"Accept": accept})
        assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Created At"]


async def test_namespace_is_required_and_mismatch_rejected() -> None:
    async with open_harness() as h:
        code, err = await h.call("POST", "/api/v1/namespaces/missing/pods", pod("a"))
        assert code == 404 and err["message"] == 'namespaces "missing" not found'
        body = pod("b")
        body["metadata"]["namespace"] = "kube-system"
        code, err = await h.call("POST", POD, body)
        assert code == 400 and err["reason"] == "BadRequest"


async def test_metrics_expose_request_counts() -> None:
    async with open_harness() as h:
        await h.call("POST", POD, pod("a"))
        await h.call("GET", POD + "/a")
        code, text = await h.call("GET", "/metrics")
        assert code == 200
        assert (
            'apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 1'
            in text
        )
        assert (
            'apiserver_request_total{code="200",resource="pods",subresource="",verb="GET"} 1'
            in text
        )
        assert [w.verb for w in h.audit.writes] == ["create"]
        assert h.audit.writes[0].name == "a"
