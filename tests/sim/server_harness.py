"""In-process harness for the API server tests: an aiohttp TestClient over build_app."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp.test_utils import TestClient, TestServer

from rayop.sim.apiserver.app import build_app
from rayop.sim.apiserver.audit import Audit
from rayop.sim.apiserver.faults import Faults
from rayop.sim.storage.store import Store

_INLINE_BODY_BYTES = 1024 * 1024
TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
POD = "/api/v1/namespaces/default/pods"
CM = "/api/v1/namespaces/default/configmaps"


@dataclass
class Harness:
    """A running app: its client, store, faults and audit."""

    client: TestClient[Any, Any]
    store: Store
    faults: Faults
    audit: Audit

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        ctype: str = "application/json",
        headers: dict[str, str] | None = None,
        **params: Any,
    ) -> tuple[int, Any]:
        """Sends one request with the token; returns (status, decoded JSON body or text)."""
        hdrs = {**AUTH, "Content-Type": ctype, **(headers or {})}
        data: Any = (
            None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        )
        if data is not None and len(data) > _INLINE_BODY_BYTES:
            data = io.BytesIO(data)  # aiohttp warns when handed over 1 MiB of bytes at once
        q = {k: str(v) for k, v in params.items()}
        async with self.client.request(method, path, data=data, headers=hdrs, params=q) as r:
            raw = await r.read()
            try:
                return r.status, orjson.loads(raw)
            except orjson.JSONDecodeError:
                return r.status, raw.decode()


@asynccontextmanager
async def open_harness(**app_kw: Any) -> AsyncIterator[Harness]:
    """Starts build_app on a loopback port; yields a Harness."""
    store = app_kw.pop("store", None) or Store(graceful_pod_deletion=False, seed=7)
    faults = app_kw.pop("faults", None) or Faults(seed=3)
    audit = Audit()
    app = build_app(store, token=TOKEN, faults=faults, audit=audit, **app_kw)
    client: TestClient[Any, Any] = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield Harness(client, store, faults, audit)
    finally:
        await client.close()


def pod(name: str, **labels: str) -> dict[str, Any]:
    """A minimal pod manifest."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
