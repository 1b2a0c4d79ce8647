"""Discovery: /version, /api, /apis, group versions and resource lists (W5)."""

from __future__ import annotations

from .kubehttp import Kube
from .status_shape import assert_status


async def test_version_and_core_discovery(kube: Kube) -> None:
    code, version = await kube.get("/version")
    assert code == 200 and version["major"] and version["gitVersion"]
    code, api = await kube.get("/api")
    assert code == 200 and api["kind"] == "APIVersions" and "v1" in api["versions"]
    code, core = await kube.get("/api/v1")
    assert code == 200 and core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["namespaced"] and by_name["pods"]["kind"] == "Pod"
    assert {"create", "get", "list", "watch", "delete"} <= set(by_name["pods"]["verbs"])
    assert "pods/status" in by_name and not by_name["namespaces"]["namespaced"]


async def test_group_discovery_lists_builtin_groups(kube: Kube) -> None:
    code, groups = await kube.get("/apis")
    assert code == 200 and groups["kind"] == "APIGroupList"
    names = {g["name"]: g for g in groups["groups"]}
    for group in ("batch", "coordination.k8s.io", "discovery.k8s.io", "apiextensions.k8s.io"):
        assert group in names, group
    assert names["batch"]["preferredVersion"]["groupVersion"] == "batch/v1"
    code, batch = await kube.get("/apis/batch/v1")
    assert code == 200 and any(r["name"] == "jobs" for r in batch["resources"])


async def test_unknown_paths_are_404_statuses(kube: Kube) -> None:
    code, body = await kube.get("/apis/nonexistent.example.com/v1/widgets")
    assert code == 404
    code, body = await kube.get("/api/v1/namespaces/default/nonexistents/x")
    assert_status(code, body, 404, "NotFound")
