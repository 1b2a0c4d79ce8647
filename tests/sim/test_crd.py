"""CRDs: registration, discovery, schema validation (422 with paths), pruning, defaults,
status subresource and generation, printer columns, and removal."""

from __future__ import annotations

import functools
from typing import Any

import orjson
import pytest
import yaml

from tests.kuberay_compat import crds_dir

from .server_harness import Harness, open_harness

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RC = "/apis/ray.io/v1/namespaces/default/rayclusters"


def _cluster(name: str = "rc", **spec_extra: Any) -> dict[str, Any]:
    worker = {
        "groupName": "wg",
        "replicas": 1,
        "minReplicas": 0,
        "maxReplicas": 3,
        "rayStartParams": {},
        "template": {
            "spec": {
                "containers": [{"name": "w", "image": "ray", "ports": [{"containerPort": 80}]}]
            }
        },
    }
    spec = {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "h", "image": "ray"}]}},
        },
        "workerGroupSpecs": [worker],
        **spec_extra,
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": spec,
    }


@functools.cache
def _crd_text() -> bytes:
    crd = yaml.load((crds_dir() / "ray.io_rayclusters.yaml").read_text(), Loader=yaml.CSafeLoader)
    return orjson.dumps(crd)


async def _install(h: Harness) -> None:
    crd = orjson.loads(_crd_text())
    code, body = await h.call("POST", CRD_PATH, crd)
    assert code == 201, body
    assert {c["type"] for c in body["status"]["conditions"]} == {"Established", "NamesAccepted"}


async def test_crd_is_served_with_discovery_and_defaults_and_pruning() -> None:
    async with open_harness() as h:
        await _install(h)
        code, groups = await h.call("GET", "/apis")
        assert "ray.io" in [g["name"] for g in groups["groups"]]
        code, res = await h.call("GET", "/apis/ray.io/v1")
        names = {r["name"]: r for r in res["resources"]}
        assert names["rayclusters"]["kind"] == "RayCluster" and "rayclusters/status" in names
        assert names["rayclusters"]["categories"] == ["all"]
        body = _cluster(unknownField=1)
        body["status"] = {"state": "ready"}
        code, rc = await h.call("POST", RC, body)
        assert code == 201, rc
        assert "unknownField" not in rc["spec"] and "status" not in rc
        port = rc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["ports"][0]
        assert port["protocol"] == "TCP"
        assert rc["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (
            lambda s: s["workerGroupSpecs"][0].update(replicas="x"),
            "spec.workerGroupSpecs[0].replicas",
            "FieldValueTypeInvalid",
        ),
        (
            lambda s: s["workerGroupSpecs"][0].pop("groupName"),
            "spec.workerGroupSpecs[0].groupName",
            "FieldValueRequired",
        ),
        (
            lambda s: s.update(autoscalerOptions={"upscalingMode": "Turbo"}),
            "spec.autoscalerOptions.upscalingMode",
            "FieldValueNotSupported",
        ),
        (lambda s: s.pop("headGroupSpec"), "spec.headGroupSpec", "FieldValueRequired"),
    ],
)
async def test_invalid_custom_resources_get_422_with_field_path(
    mutate: Any, field: str, reason: str
) -> None:
    async with open_harness() as h:
        await _install(h)
        body = _cluster()
        mutate(body["spec"])
        code, err = await h.call("POST", RC, body)
        assert code == 422 and err["reason"] == "Invalid"
        assert err["message"].startswith('RayCluster.ray.io "rc" is invalid: ')
        assert field in err["message"]
        assert err["details"]["causes"][0]["field"] == field
        assert err["details"]["causes"][0]["reason"] == reason


async def test_status_subresource_and_generation_and_unconditional_update() -> None:
    async with open_harness() as h:
        await _install(h)
        _, rc = await h.call("POST", RC, _cluster())
        rc["status"] = {"state": "ready"}
        code, rc2 = await h.call("PUT", RC + "/rc/status", rc)
        assert code == 200 and rc2["status"]["state"] == "ready"
        assert rc2["metadata"]["generation"] == 1
        rc2["metadata"]["labels"] = {"x": "y"}
        code, rc3 = await h.call("PUT", RC + "/rc", rc2)
        assert rc3["metadata"]["generation"] == 1 and rc3["status"]["state"] == "ready"
        rc3["spec"]["workerGroupSpecs"][0]["replicas"] = 2
        rc3["status"] = {"state": "suspended"}
        code, rc4 = await h.call("PUT", RC + "/rc", rc3)
        assert rc4["metadata"]["generation"] == 2 and rc4["status"]["state"] == "ready"
        del rc4["metadata"]["resourceVersion"]
        code, err = await h.call("PUT", RC + "/rc", rc4)
        assert code == 422 and "metadata.resourceVersion" in err["message"]
        code, err = await h.call(
            "PATCH", RC + "/rc", {"spec": {}}, ctype="application/strategic-merge-patch+json"
        )
        assert code == 415


async def test_printer_columns_and_crd_deletion_removes_resources() -> None:
    async with open_harness() as h:
        await _install(h)
        await h.call("POST", RC, _cluster())
        accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        code, t = await h.call("GET", RC, headers={"Accept": accept})
        cols = [c["name"] for c in t["columnDefinitions"]]
        assert cols[:3] == ["Name", "desired workers", "available workers"] and "age" in cols
        assert t["rows"][0]["cells"][0] == "rc"
        code, _ = await h.call("DELETE", CRD_PATH + "/rayclusters.ray.io")
        assert code == 200
        code, _ = await h.call("GET", RC)
        assert code == 404
        assert h.store.current_rv() > 0
