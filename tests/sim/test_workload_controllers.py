"""The plane's Deployment, ReplicaSet and StatefulSet controllers, through the HTTP API: pods,
ownerReferences, pod-template-hash, status counts, a rolling update of a template change,
ordered StatefulSet pods with their claims, and apps/v1 in discovery and OpenAPI."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import eventually

Obj = dict[str, Any]
FAST = KubeletConfig(running_delay=0.05, ready_delay=0.05, delete_delay=0.01)
APPS = "/apis/apps/v1/namespaces/default"


class Api:
    def __init__(self, cp: EmbeddedControlPlane, http: aiohttp.ClientSession) -> None:
        self.url = cp.url
        self.http = http
        self.headers = {"Authorization": f"Bearer {cp.token}"}

    async def call(self, method: str, path: str, body: Obj | None = None, **kw: Any) -> Any:
        headers = kw.pop("headers", self.headers)
        async with self.http.request(
            method, self.url + path, json=body, headers=headers, **kw
        ) as resp:
            data = await resp.json()
            assert resp.status < 300, data
            return data

    @property
    def merge_patch(self) -> dict[str, str]:
        return {**self.headers, "Content-Type": "application/merge-patch+json"}

    async def items(self, path: str, selector: str = "") -> list[Obj]:
        params = {"labelSelector": selector} if selector else {}
        return list((await self.call("GET", path, params=params))["items"])


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    async with EmbeddedControlPlane(kubelet=FAST) as cp, aiohttp.ClientSession() as http:
        yield Api(cp, http)


def _template(labels: dict[str, str], image: str = "redis:7.4.0") -> Obj:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    await eventually(check, timeout=20, what=what)


async def test_apps_v1_serves_the_workloads_in_discovery_and_openapi(api: Api) -> None:
    names = {r["name"] for r in (await api.call("GET", "/apis/apps/v1"))["resources"]}
    assert {"deployments", "replicasets", "statefulsets", "deployments/status"} <= names
    paths = (await api.call("GET", "/openapi/v2"))["paths"]
    for plural in ("deployments", "replicasets", "statefulsets"):
        assert f"/apis/apps/v1/namespaces/{{namespace}}/{plural}/{{name}}" in paths


async def test_a_deployment_runs_pods_through_a_replica_set_and_rolls_a_template_change(
    api: Api,
) -> None:
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": _template({"app": "web"}),
        },
    }
    created = await api.call("POST", f"{APPS}/deployments", deployment)

    async def settled(image: str) -> bool:
        dep = await api.call("GET", f"{APPS}/deployments/web")
        st = dep.get("status") or {}
        pods = [
            p
            for p in await api.items("/api/v1/namespaces/default/pods", "app=web")
            if not p["metadata"].get("deletionTimestamp")
        ]
        return (
            st.get("observedGeneration") == dep["metadata"]["generation"]
            and st.get("updatedReplicas") == st.get("readyReplicas") == 2
            and st.get("availableReplicas") == st.get("replicas") == 2
            and len(pods) == 2
            and all(p["spec"]["containers"][0]["image"] == image for p in pods)
        )

    await _until(lambda: settled("redis:7.4.0"), "2 ready replicas")
    (rs,) = await api.items(f"{APPS}/replicasets", "app=web")
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert rs["spec"]["selector"]["matchLabels"] == {
        "app": "web",
        "pod-template-hash": template_hash,
    }
    assert rs["status"]["readyReplicas"] == 2
    pods = await api.items("/api/v1/namespaces/default/pods", "app=web")
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        assert pod["metadata"]["labels"]["pod-template-hash"] == template_hash
        assert pod["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"]
    table = await api.call(
        "GET",
        f"{APPS}/deployments",
        headers={**api.headers, "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:4] == ["Name", "Ready", "Up-to-date", "Available"]  # kubectl get deploy
    assert table["rows"][0]["cells"][:4] == ["web", "2/2", 2, 2]
    dep = await api.call("GET", f"{APPS}/deployments/web")
    conditions = {c["type"]: c for c in dep["status"]["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"

    # A template change: a second ReplicaSet takes over; the first is scaled to 0.
    patch = {"spec": {"template": _template({"app": "web"}, image="redis:7.2")}}
    await api.call(
        "PATCH",
        f"{APPS}/deployments/web",
        patch,
        headers=api.merge_patch,
    )
    await _until(lambda: settled("redis:7.2"), "the rollout to redis:7.2")
    sets = {r["metadata"]["name"]: r for r in await api.items(f"{APPS}/replicasets", "app=web")}
    assert len(sets) == 2 and sets[rs["metadata"]["name"]]["spec"]["replicas"] == 0
    (new,) = [r for n, r in sets.items() if n != rs["metadata"]["name"]]
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"

    # Scaling down, and a deleted pod replaced.
    await api.call(
        "PATCH",
        f"{APPS}/deployments/web",
        {"spec": {"replicas": 1}},
        headers=api.merge_patch,
    )

    async def one() -> bool:
        live = [
            p
            for p in await api.items("/api/v1/namespaces/default/pods", "app=web")
            if not p["metadata"].get("deletionTimestamp")
        ]
        dep = await api.call("GET", f"{APPS}/deployments/web")
        return len(live) == 1 and dep["status"].get("availableReplicas") == 1

    await _until(one, "1 replica")
    (pod,) = [
        p
        for p in await api.items("/api/v1/namespaces/default/pods", "app=web")
        if not p["metadata"].get("deletionTimestamp")
    ]
    await api.call("DELETE", f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}")

    async def replaced() -> bool:
        live = [
            p
            for p in await api.items("/api/v1/namespaces/default/pods", "app=web")
            if not p["metadata"].get("deletionTimestamp")
        ]
        return len(live) == 1 and live[0]["metadata"]["name"] != pod["metadata"]["name"]

    await _until(replaced, "a replacement pod")


async def test_a_stateful_set_creates_ordered_pods_with_their_claims(api: Api) -> None:
    sts = {
        "metadata": {"name": "redis"},
        "spec": {
            "replicas": 2,
            "serviceName": "redis",
            "selector": {"matchLabels": {"app": "redis"}},
            "template": _template({"app": "redis"}),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    created = await api.call("POST", f"{APPS}/statefulsets", sts)

    async def ready() -> bool:
        st = (await api.call("GET", f"{APPS}/statefulsets/redis")).get("status") or {}
        return st.get("readyReplicas") == 2 and st.get("replicas") == 2

    await _until(ready, "2 ready StatefulSet pods")
    pods = {p["metadata"]["name"]: p for p in await api.items("/api/v1/namespaces/default/pods")}
    assert set(pods) == {"redis-0", "redis-1"}
    first, second = pods["redis-0"], pods["redis-1"]
    assert first["metadata"]["creationTimestamp"] <= second["metadata"]["creationTimestamp"]
    # ordered: redis-1 was created only once redis-0 was ready
    ready_at = next(
        c["lastTransitionTime"] for c in first["status"]["conditions"] if c["type"] == "Ready"
    )
    assert second["metadata"]["creationTimestamp"] >= ready_at
    for ordinal, pod in enumerate((first, second)):
        labels = pod["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == f"redis-{ordinal}"
        assert labels["apps.kubernetes.io/pod-index"] == str(ordinal)
        assert pod["spec"]["hostname"] == f"redis-{ordinal}" and pod["spec"]["subdomain"] == "redis"
        assert pod["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "data")
        assert volume["persistentVolumeClaim"]["claimName"] == f"data-redis-{ordinal}"
    claims = {
        c["metadata"]["name"]: c
        for c in await api.items("/api/v1/namespaces/default/persistentvolumeclaims")
    }
    assert set(claims) == {"data-redis-0", "data-redis-1"}
    assert claims["data-redis-0"]["metadata"]["labels"] == {"app": "redis"}
    table = await api.call(
        "GET",
        f"{APPS}/statefulsets",
        headers={**api.headers, "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    assert table["rows"][0]["cells"][:2] == ["redis", "2/2"]  # kubectl get sts: NAME READY
    status = (await api.call("GET", f"{APPS}/statefulsets/redis"))["status"]
    assert (
        status["currentRevision"] == status["updateRevision"] == labels["controller-revision-hash"]
    )
    assert status["updatedReplicas"] == status["currentReplicas"] == 2

    # A deleted pod comes back under its name, with its claim; scale-down takes the highest.
    await api.call("DELETE", "/api/v1/namespaces/default/pods/redis-0")

    async def back() -> bool:
        async with api.http.get(
            api.url + "/api/v1/namespaces/default/pods/redis-0", headers=api.headers
        ) as resp:
            if resp.status == 404:  # gone, not yet created again
                return False
            pod = await resp.json()
        return pod["metadata"]["uid"] != first["metadata"]["uid"] and not pod["metadata"].get(
            "deletionTimestamp"
        )

    await _until(back, "redis-0 recreated")
    await api.call(
        "PATCH",
        f"{APPS}/statefulsets/redis",
        {"spec": {"replicas": 1}},
        headers=api.merge_patch,
    )

    async def scaled() -> bool:
        names = {p["metadata"]["name"] for p in await api.items("/api/v1/namespaces/default/pods")}
        st = (await api.call("GET", f"{APPS}/statefulsets/redis")).get("status") or {}
        return names == {"redis-0"} and st.get("replicas") == 1

    await _until(scaled, "scaled to 1")
    claims_after = await api.items("/api/v1/namespaces/default/persistentvolumeclaims")
    assert len(claims_after) == 2  # Retain: claims outlive their pods
