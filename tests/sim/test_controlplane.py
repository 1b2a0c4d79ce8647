"""EmbeddedControlPlane: HTTP server, kubeconfig, bootstrap objects, kubelet, proxy, state."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import eventually

FAST = KubeletConfig(running_delay=0.01, ready_delay=0.01, delete_delay=0.01)


def _exists(path: str | Path) -> bool:
    return Path(path).exists()


def _load_yaml(path: str | Path) -> Any:
    return yaml.safe_load(Path(path).read_text())


def _info(cp: EmbeddedControlPlane, plural: str) -> ResourceInfo:
    found = cp.store.resources.get("", "v1", plural)
    assert found is not None
    return found


def _auth(cp: EmbeddedControlPlane) -> dict[str, str]:
    return {"Authorization": f"Bearer {cp.token}"}


async def _wait_ready(
    http: aiohttp.ClientSession, cp: EmbeddedControlPlane, name: str
) -> dict[str, Any]:
    url = f"{cp.url}/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name={name}"
    async with http.get(url, headers=_auth(cp)) as resp:
        assert resp.status == 200
        async for line in resp.content:
            event = yaml.safe_load(line)
            pod: dict[str, Any] = event["object"]
            conds = (pod.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conds):
                return pod
    raise AssertionError("watch ended before the pod was ready")


async def test_serves_the_api_with_a_kubeconfig_and_a_token(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.yaml"
    async with EmbeddedControlPlane(kubelet=FAST, kubeconfig_path=kubeconfig, token="s3cret") as cp:
        assert cp.kubeconfig_path == str(kubeconfig) and cp.token == "s3cret"
        doc = _load_yaml(kubeconfig)
        assert doc["current-context"] == "rayop-embedded"
        assert doc["clusters"][0]["cluster"]["server"] == cp.url
        assert doc["users"][0]["user"]["token"] == "s3cret"
        assert cp.url.startswith("http://127.0.0.1:") and not cp.url.endswith(":0")
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{cp.url}/api/v1/namespaces") as resp:
                assert resp.status == 401
            async with http.get(f"{cp.url}/api/v1/namespaces", headers=_auth(cp)) as resp:
                assert resp.status == 200
                names = {n["metadata"]["name"] for n in (await resp.json())["items"]}
            assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
            await cp.kubelet.wait_idle()
            sa = await cp.store.get(_info(cp, "serviceaccounts"), "default", "default")
            assert sa["metadata"]["name"] == "default"
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            }
            async with http.post(
                f"{cp.url}/api/v1/namespaces/default/pods", json=body, headers=_auth(cp)
            ) as resp:
                assert resp.status == 201
            pod = await _wait_ready(http, cp, "web")
            assert pod["spec"]["nodeName"] and pod["status"]["podIP"]
        assert cp.audit.count(verb="create", resource="pods", code=201) == 1
    assert _exists(kubeconfig)  # a requested path is kept after exit


async def test_temporary_kubeconfig_is_removed_on_exit() -> None:
    async with EmbeddedControlPlane(kubelet=FAST) as cp:
        path = cp.kubeconfig_path
        assert _exists(path)
    assert not _exists(path)


async def test_services_proxy_reaches_a_registered_handler() -> None:
    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"path": request.path, "query": request.query_string})

    app = web.Application()
    app.router.add_get("/{tail:.*}", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    backend = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with EmbeddedControlPlane(kubelet=FAST) as cp:
            svc = {
                "metadata": {"name": "head-svc"},
                "spec": {"ports": [{"name": "dashboard", "port": 8265}], "selector": {"a": "b"}},
            }
            await cp.store.create(_info(cp, "services"), "default", svc)
            cp.register_service_handler("default", "head-svc", 8265, backend)
            async with aiohttp.ClientSession() as http:
                for port in ("8265", "dashboard"):
                    url = (
                        f"{cp.url}/api/v1/namespaces/default/services/head-svc:{port}"
                        "/proxy/api/jobs/?x=1"
                    )
                    async with http.get(url, headers=_auth(cp)) as resp:
                        assert resp.status == 200, await resp.text()
                        assert await resp.json() == {"path": "/api/jobs/", "query": "x=1"}
    finally:
        await runner.cleanup()


async def test_state_survives_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    async with EmbeddedControlPlane(kubelet=FAST, state_path=state) as cp:
        cms = _info(cp, "configmaps")
        created = await cp.store.create(
            cms, "default", {"metadata": {"name": "keep"}, "data": {"a": "1"}}
        )
        rv = cp.store.current_rv()
    async with EmbeddedControlPlane(kubelet=FAST, state_path=state) as cp:
        cms = _info(cp, "configmaps")
        got = await cp.store.get(cms, "default", "keep")
        assert got["metadata"]["uid"] == created["metadata"]["uid"] and got["data"] == {"a": "1"}
        assert cp.store.current_rv() >= rv
        again = await cp.store.create(cms, "default", {"metadata": {"name": "next"}})
        assert int(again["metadata"]["resourceVersion"]) > rv


async def test_stop_is_prompt_with_an_open_watch() -> None:
    cp = EmbeddedControlPlane(kubelet=FAST)
    await cp.start()
    http = aiohttp.ClientSession()
    resp = await http.get(f"{cp.url}/api/v1/namespaces/default/pods?watch=1", headers=_auth(cp))
    assert resp.status == 200
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await cp.stop()
    assert loop.time() - t0 < 5
    resp.close()
    await http.close()


async def test_tls_serves_https_with_the_ca_in_the_kubeconfig() -> None:
    async with EmbeddedControlPlane(kubelet=FAST, tls=True) as cp:
        assert cp.url.startswith("https://127.0.0.1:")
        doc = _load_yaml(cp.kubeconfig_path)
        assert doc["clusters"][0]["cluster"]["certificate-authority-data"]
        ctx = cp.client_ssl_context()
        assert ctx is not None
        async with aiohttp.ClientSession() as http:
            async with http.get(
                f"{cp.url}/api/v1/namespaces/default", headers=_auth(cp), ssl=ctx
            ) as resp:
                assert resp.status == 200
                assert (await resp.json())["metadata"]["name"] == "default"
            async with http.get(f"{cp.url}/api/v1/namespaces/default", ssl=ctx) as resp:
                assert resp.status == 401


async def test_a_port_in_use_fails_start_cleanly() -> None:
    async with EmbeddedControlPlane(kubelet=FAST) as first:
        second = EmbeddedControlPlane(kubelet=FAST, port=first.port)
        with pytest.raises(OSError):
            await second.start()
        with pytest.raises(RuntimeError):
            second.store  # noqa: B018  (stopped again: no store)


async def test_a_watch_client_that_disconnects_is_dropped_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with EmbeddedControlPlane(kubelet=FAST) as cp, aiohttp.ClientSession() as http:
        base = f"{cp.url}/api/v1/namespaces/default/configmaps"
        resp = await http.get(f"{base}?watch=1", headers=_auth(cp))
        assert resp.status == 200
        async with http.post(base, json={"metadata": {"name": "first"}}, headers=_auth(cp)) as r:
            assert r.status == 201
        assert b'"ADDED"' in await resp.content.readline()
        resp.close()  # drops the connection mid-stream
        # The client has gone. Later events must not make the server log a traceback when
        # it finds the connection closed (each round trip gives the watch time to write).
        for index in range(20):
            body = {"metadata": {"name": f"after-{index}"}}
            async with http.post(base, json=body, headers=_auth(cp)) as made:
                assert made.status == 201
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


async def test_a_persistent_volume_claim_binds_once_a_pod_uses_it() -> None:
    async with EmbeddedControlPlane(kubelet=FAST) as cp, aiohttp.ClientSession() as http:
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "gcs-storage"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        url = f"{cp.url}/api/v1/namespaces/default/persistentvolumeclaims"
        async with http.post(url, json=claim, headers=_auth(cp)) as resp:
            assert resp.status == 201, await resp.text()
        async with http.get(f"{url}/gcs-storage", headers=_auth(cp)) as resp:
            stored = await resp.json()
        assert stored["status"]["phase"] == "Pending"  # kind's class waits for its first consumer
        pod = {
            "metadata": {"name": "uses-it"},
            "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "gcs-storage"}}],
            },
        }
        pods = f"{cp.url}/api/v1/namespaces/default/pods"
        async with http.post(pods, json=pod, headers=_auth(cp)) as resp:
            assert resp.status == 201, await resp.text()

        async def claim_phase() -> str:
            async with http.get(f"{url}/gcs-storage", headers=_auth(cp)) as resp:
                return str((await resp.json())["status"]["phase"])

        async def bound() -> bool:
            return await claim_phase() == "Bound"

        await eventually(bound, timeout=10, what="the claim Bound")
        async with http.get(f"{url}/gcs-storage", headers=_auth(cp)) as resp:
            stored = await resp.json()
        assert stored["spec"]["storageClassName"] == "standard"
        assert stored["spec"]["volumeName"] == f"pvc-{stored['metadata']['uid']}"
