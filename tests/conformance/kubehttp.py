"""A deliberately tiny Kubernetes HTTP client for the conformance suite (aiohttp only).

It reads a kubeconfig (server, CA, bearer token or client certificate) and nothing of rayop,
so the suite runs unchanged against the embedded control plane or a real kube-apiserver.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import yaml

Obj = dict[str, Any]

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def _material(user_or_cluster: Mapping[str, Any], key: str, workdir: Path) -> str | None:
    data = user_or_cluster.get(f"{key}-data")
    if data:
        path = workdir / key
        path.write_bytes(base64.b64decode(data))
        return str(path)
    value = user_or_cluster.get(key)
    return str(value) if value else None


class Kube:
    """Sends raw requests to the API server named by a kubeconfig; returns (status, body)."""

    def __init__(self, kubeconfig: str | Path) -> None:
        doc = yaml.safe_load(Path(kubeconfig).read_text())
        ctx_name = doc.get("current-context")
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        user: dict[str, Any] = next(
            (u["user"] for u in doc.get("users") or [] if u["name"] == ctx.get("user")), {}
        )
        self.server = str(cluster["server"]).rstrip("/")
        self.headers: dict[str, str] = {}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self._workdir = Path(tempfile.mkdtemp(prefix="conformance-"))
        self.ssl: ssl.SSLContext | bool = False
        if self.server.startswith("https"):
            ctx_ssl = ssl.create_default_context(
                cafile=_material(cluster, "certificate-authority", self._workdir)
            )
            if cluster.get("insecure-skip-tls-verify"):
                ctx_ssl.check_hostname = False
                ctx_ssl.verify_mode = ssl.CERT_NONE
            cert = _material(user, "client-certificate", self._workdir)
            key = _material(user, "client-key", self._workdir)
            if cert and key:
                ctx_ssl.load_cert_chain(cert, key)
            self.ssl = ctx_ssl
        self.session = aiohttp.ClientSession(headers=self.headers)

    async def close(self) -> None:
        """Closes the HTTP session and removes the key material written for it."""
        await self.session.close()
        shutil.rmtree(self._workdir, ignore_errors=True)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        """Sends one request; returns the status and the decoded JSON body (or text)."""
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body)
            hdrs["Content-Type"] = content_type
        query = {
            k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (params or {}).items()
        }
        async with self.session.request(
            method, self.server + path, params=query, data=data, headers=hdrs, ssl=self.ssl
        ) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text) if text else None
            except ValueError:
                return resp.status, text

    async def get(self, path: str, **params: Any) -> tuple[int, Any]:
        return await self.request("GET", path, params=params)

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body=body)

    async def put(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body=body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE) -> tuple[int, Any]:
        return await self.request("PATCH", path, body=body, content_type=content_type)

    async def delete(self, path: str, body: Any = None, **params: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body=body, params=params)

    @asynccontextmanager
    async def watch(
        self, path: str, **params: Any
    ) -> AsyncIterator[tuple[int, AsyncIterator[Obj]]]:
        """Opens a watch; yields (HTTP status, iterator of decoded events)."""
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
        query["watch"] = "true"
        async with self.session.get(
            self.server + path,
            params=query,
            ssl=self.ssl,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=60),
        ) as resp:

            async def events() -> AsyncIterator[Obj]:
                async for line in resp.content:
                    if line.strip():
                        yield json.loads(line)

            yield resp.status, events()
