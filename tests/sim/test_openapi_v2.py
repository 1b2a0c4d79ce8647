"""/openapi/v2 in JSON and gnostic protobuf, and kubectl's fallback to it (the real kubectl)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from rayop.sim.apiserver.openapi_proto import openapiv2_pb2 as v2
from rayop.testing import PlaneUnderTest, open_control_plane

from .apiserver_process import kubectl_env, running_apiserver

KUBECTL = "/usr/bin/kubectl"
ROOT = Path(__file__).resolve().parents[2]
PROTOBUF_ASKED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_SENT = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
POD_GVK = {"group": "", "kind": "Pod", "version": "v1"}


@pytest.fixture
async def plane() -> AsyncIterator[tuple[PlaneUnderTest, aiohttp.ClientSession]]:
    async with open_control_plane() as p:
        headers = {"Authorization": f"Bearer {p.cp.token}"}
        async with aiohttp.ClientSession(p.cp.url, headers=headers) as session:
            yield p, session


async def _get(session: aiohttp.ClientSession, accept: str | None) -> tuple[int, str, bytes]:
    headers = {} if accept is None else {"Accept": accept}
    async with session.get("/openapi/v2", headers=headers) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


def _patch_gvks(doc: v2.Document) -> dict[str, list[str]]:
    """Maps each PATCH operation's group-version-kind (as YAML text) to its query parameters."""
    out: dict[str, list[str]] = {}
    for path in doc.paths.path:
        op = path.value.patch
        for ext in op.vendor_extension:
            if ext.name == "x-kubernetes-group-version-kind":
                params = [
                    p.parameter.non_body_parameter.query_parameter_sub_schema.name
                    for p in op.parameters
                ]
                out[ext.value.yaml] = params
    return out


async def test_json_names_every_resource_with_its_gvk_and_field_validation(
    plane: tuple[PlaneUnderTest, aiohttp.ClientSession],
) -> None:
    _, session = plane
    for accept in (None, "application/json", "*/*"):
        code, ctype, raw = await _get(session, accept)
        assert code == 200 and ctype == "application/json"
        doc: dict[str, Any] = yaml.safe_load(raw)
        assert doc["swagger"] == "2.0" and doc["definitions"] == {}
        patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
        assert patch["x-kubernetes-group-version-kind"] == POD_GVK
        assert [p["name"] for p in patch["parameters"]] == ["fieldValidation"]
        assert "/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}" in doc["paths"]


async def test_protobuf_decodes_as_gnostics_document(
    plane: tuple[PlaneUnderTest, aiohttp.ClientSession],
) -> None:
    _, session = plane
    for accept in (PROTOBUF_ASKED, PROTOBUF_SENT, f"{PROTOBUF_ASKED}, application/json;q=0.5"):
        code, ctype, raw = await _get(session, accept)
        assert code == 200 and ctype == PROTOBUF_SENT
        doc = v2.Document()
        doc.ParseFromString(raw)
        assert doc.swagger == "2.0" and doc.HasField("definitions")
        gvks = {yaml.safe_dump(POD_GVK, sort_keys=True): ["fieldValidation"]}
        assert gvks.items() <= _patch_gvks(doc).items()
        kinds = {yaml.safe_load(k)["kind"] for k in _patch_gvks(doc)}
        assert {"Pod", "Service", "RayCluster", "RayJob", "RayService"} <= kinds


async def test_unsupported_accept_is_406_and_etag_revalidates(
    plane: tuple[PlaneUnderTest, aiohttp.ClientSession],
) -> None:
    _, session = plane
    code, _, raw = await _get(session, "text/html")
    assert code == 406 and raw == b""
    async with session.get("/openapi/v2", headers={"Accept": PROTOBUF_ASKED}) as resp:
        etag = resp.headers["ETag"]
    headers = {"Accept": PROTOBUF_ASKED, "If-None-Match": etag}
    async with session.get("/openapi/v2", headers=headers) as resp:
        assert resp.status == 304
    async with (
        aiohttp.ClientSession(plane[0].cp.url) as anonymous,
        anonymous.get("/openapi/v2") as resp,
    ):
        assert resp.status == 401


async def test_a_new_crd_shows_in_the_document(
    plane: tuple[PlaneUnderTest, aiohttp.ClientSession],
) -> None:
    _, session = plane
    _, _, before = await _get(session, "application/json")
    assert b"/apis/example.com/v1/" not in before
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    async with session.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd):
        pass
    _, _, after = await _get(session, "application/json")
    assert b'"/apis/example.com/v1/widgets/{name}"' in after


@pytest.fixture(scope="module")
def kubectl_env_of(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    workdir = tmp_path_factory.mktemp("kubectl-openapi")
    with running_apiserver(workdir) as kubeconfig:
        yield kubectl_env(kubeconfig, workdir)


def test_kubectl_apply_of_an_unknown_kind_says_no_matches_for_kind(
    kubectl_env_of: dict[str, str], tmp_path: Path
) -> None:
    manifest = tmp_path / "unknown.yaml"
    manifest.write_text("apiVersion: ray.io/v1\nkind: RayWorkflow\nmetadata: {name: x}\nspec: {}\n")
    result = subprocess.run(
        [KUBECTL, "apply", "-f", str(manifest)],
        env=kubectl_env_of,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert 'no matches for kind "RayWorkflow" in version "ray.io/v1"' in result.stderr
    assert "failed to download openapi" not in result.stderr


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go and the module proxy")
def test_the_generated_module_matches_gnostics_proto() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen-openapi-v2"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
