"""Behaviour of particular kinds: services, pods and their deletion, namespaces, tables."""

from __future__ import annotations

import asyncio
from typing import Any

from rayop.testing import eventually

from .kubehttp import Kube
from .status_shape import assert_status

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def test_services_get_cluster_ips_and_node_ports(kube: Kube, ns: str) -> None:
    svcs = f"/api/v1/namespaces/{ns}/services"
    code, plain = await kube.post(
        svcs,
        {"metadata": {"name": "plain"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}},
    )
    assert code == 201, plain
    assert plain["spec"]["clusterIP"] and plain["spec"]["clusterIP"] != "None"
    assert plain["spec"]["ports"][0]["targetPort"] == 80
    code, headless = await kube.post(
        svcs,
        {
            "metadata": {"name": "headless"},
            "spec": {"clusterIP": "None", "selector": {"a": "b"}, "ports": [{"port": 80}]},
        },
    )
    assert code == 201 and headless["spec"]["clusterIP"] == "None"
    code, nodeport = await kube.post(
        svcs,
        {
            "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "selector": {"a": "b"}, "ports": [{"port": 80}]},
        },
    )
    assert code == 201, nodeport
    assert 30000 <= nodeport["spec"]["ports"][0]["nodePort"] <= 32767


async def _wait_pod(
    kube: Kube, path: str, predicate: Any, *, timeout: float = 60, since: str | None = None
) -> dict[str, Any]:
    """Watches one pod until ``predicate(event_type, pod)`` holds; returns that pod.

    ``since`` is a resourceVersion to watch from: without it the watch starts at the current
    state, so a change made before the watch opened (kwok deletes a pod within milliseconds of
    its deletionTimestamp) would never be seen.
    """
    collection, name = path.rsplit("/", 1)
    params: dict[str, Any] = {"fieldSelector": f"metadata.name={name}"}
    if since is not None:
        params["resourceVersion"] = since
    async with asyncio.timeout(timeout):
        async with kube.watch(collection, timeoutSeconds=int(timeout), **params) as (
            status,
            events,
        ):
            assert status == 200
            async for event in events:
                obj: dict[str, Any] = event["object"]
                if predicate(event["type"], obj):
                    return obj
    raise AssertionError(f"{path} never reached the expected state")


def _ready(_: str, pod: dict[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


async def test_pod_runs_and_graceful_deletion_shows_a_deletion_timestamp(
    kube: Kube, ns: str
) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    code, pod = await kube.post(
        pods,
        {
            "metadata": {"name": "life"},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "c", "image": "nginx"}],
            },
        },
    )
    assert code == 201, pod
    ready = await _wait_pod(kube, f"{pods}/life", _ready)
    assert (
        ready["spec"]["nodeName"]
        and ready["status"]["podIP"]
        and ready["status"]["phase"] == "Running"
    )
    code, deleting = await kube.delete(f"{pods}/life")
    assert code == 200 and deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 1
    since = deleting["metadata"]["resourceVersion"]
    await _wait_pod(kube, f"{pods}/life", lambda t, _: t == "DELETED", since=since)
    code, body = await kube.get(f"{pods}/life")
    assert_status(code, body, 404, "NotFound")


async def test_namespace_deletion_removes_its_content(kube: Kube) -> None:
    code, _ = await kube.post("/api/v1/namespaces", {"metadata": {"name": "conf-doomed"}})
    assert code == 201
    await kube.post("/api/v1/namespaces/conf-doomed/configmaps", {"metadata": {"name": "x"}})
    code, _ = await kube.delete("/api/v1/namespaces/conf-doomed")
    assert code == 200

    async def namespace_gone() -> bool:  # until then it is Terminating and refuses content
        code, ns_obj = await kube.get("/api/v1/namespaces/conf-doomed")
        if code == 404:
            return True
        assert ns_obj["status"]["phase"] == "Terminating"
        code, body = await kube.post(
            "/api/v1/namespaces/conf-doomed/configmaps", {"metadata": {"name": "late"}}
        )
        assert code in (403, 404), body
        return False

    await eventually(namespace_gone, timeout=60.0, interval=0.1)
    code, _ = await kube.get("/api/v1/namespaces/conf-doomed/configmaps/x")
    assert code == 404


async def test_table_output_for_kubectl(kube: Kube, ns: str) -> None:
    await kube.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "tab"}})
    code, table = await kube.request(
        "GET", f"/api/v1/namespaces/{ns}/configmaps", headers={"Accept": TABLE}
    )
    assert code == 200 and table["kind"] == "Table", table
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[0] == "Name"
    assert [r["cells"][0] for r in table["rows"]] == ["tab"]
    assert table["rows"][0]["object"]["metadata"]["name"] == "tab"


async def test_zero_grace_period_deletes_a_running_pod_at_once(kube: Kube, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    code, _ = await kube.post(
        pods,
        {"metadata": {"name": "now"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
    )
    assert code == 201
    await _wait_pod(kube, f"{pods}/now", _ready)
    code, _ = await kube.delete(f"{pods}/now", gracePeriodSeconds=0)
    assert code == 200
    code, body = await kube.get(f"{pods}/now")
    assert_status(code, body, 404, "NotFound")
