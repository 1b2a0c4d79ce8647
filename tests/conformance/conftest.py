"""Fixtures of the API conformance suite.

The suite talks to whatever ``RAYOP_CONFORMANCE_KUBECONFIG`` names (for example a real
kube-apiserver); without it, each test gets a fresh embedded control plane.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator

import pytest

from rayop.sim.controlplane import EmbeddedControlPlane
from rayop.sim.nodes.kubelet import KubeletConfig
from rayop.testing import eventually

from .kubehttp import Kube

HISTORY = 200
"""Watch history of the embedded server; a test that needs 410 writes more events than this."""


BOOKMARK_INTERVAL = 0.2
"""Idle seconds between bookmarks on the embedded server (a real one decides for itself)."""


def external_kubeconfig() -> str | None:
    """The kubeconfig of an external API server under test, if any."""
    return os.environ.get("RAYOP_CONFORMANCE_KUBECONFIG") or None


@pytest.fixture
async def kubeconfig() -> AsyncIterator[str]:
    external = external_kubeconfig()
    if external:
        yield external
        return
    kubelet = KubeletConfig(running_delay=0.01, ready_delay=0.01, delete_delay=0.01)
    async with EmbeddedControlPlane(
        kubelet=kubelet, history_size=HISTORY, bookmark_interval=BOOKMARK_INTERVAL
    ) as cp:
        yield cp.kubeconfig_path


@pytest.fixture
async def kube(kubeconfig: str) -> AsyncIterator[Kube]:
    client = Kube(kubeconfig)
    yield client
    await client.close()


@pytest.fixture
async def ns(kube: Kube) -> AsyncIterator[str]:
    """A fresh namespace, deleted after the test."""
    name = f"conf-{secrets.token_hex(4)}"
    code, body = await kube.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert code == 201, body
    yield name
    await kube.delete(f"/api/v1/namespaces/{name}")


def crd_manifest(suffix: str) -> dict[str, object]:
    """A namespaced test CRD with a status subresource, validation, defaults and an enum."""
    plural = f"gizmos{suffix}"
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 0},
                    "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string"}, "count": {"type": "integer"}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.conformance.rayop.dev"},
        "spec": {
            "group": "conformance.rayop.dev",
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": f"gizmo{suffix}",
                "kind": f"Gizmo{suffix.upper()}",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


class CustomResource:
    """Paths of the test CRD's resource in one namespace."""

    def __init__(self, plural: str, kind: str, namespace: str) -> None:
        self.plural = plural
        self.kind = kind
        self.namespace = namespace
        self.collection = f"/apis/conformance.rayop.dev/v1/namespaces/{namespace}/{plural}"

    def item(self, name: str, subresource: str = "") -> str:
        return f"{self.collection}/{name}" + (f"/{subresource}" if subresource else "")

    def body(self, name: str, **spec: object) -> dict[str, object]:
        return {
            "apiVersion": "conformance.rayop.dev/v1",
            "kind": self.kind,
            "metadata": {"name": name},
            "spec": spec,
        }


@pytest.fixture
async def gizmos(kube: Kube, ns: str) -> AsyncIterator[CustomResource]:
    """A freshly installed test CRD (removed afterwards)."""
    suffix = secrets.token_hex(3).replace("0", "a").replace("1", "b")
    crd = crd_manifest(suffix)
    code, body = await kube.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201, body
    spec = crd["spec"]
    metadata = crd["metadata"]
    assert isinstance(spec, dict) and isinstance(metadata, dict)
    crd_name = metadata["name"]
    res = CustomResource(spec["names"]["plural"], spec["names"]["kind"], ns)

    async def served() -> bool:  # a real apiserver serves the new resource shortly after creation
        code, _ = await kube.get(res.collection)
        return code == 200

    await eventually(served, timeout=10.0)
    yield res
    await kube.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}")
