"""Create, get, list, update: metadata, resourceVersions, conflicts and Status errors (O1, O6, W4)."""

from __future__ import annotations

from .kubehttp import Kube
from .status_shape import assert_status


def _cm(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_create_sets_server_metadata(kube: Kube, ns: str) -> None:
    code, cm = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm("a", k="v"))
    assert code == 201, cm
    md = cm["metadata"]
    assert md["uid"] and md["resourceVersion"] and md["creationTimestamp"].endswith("Z")
    assert md["namespace"] == ns and cm["data"] == {"k": "v"}
    code, got = await kube.get(f"/api/v1/namespaces/{ns}/configmaps/a")
    assert code == 200 and got["metadata"]["uid"] == md["uid"]


async def test_duplicate_create_is_already_exists(kube: Kube, ns: str) -> None:
    await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm("dup"))
    code, body = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm("dup"))
    status = assert_status(code, body, 409, "AlreadyExists")
    assert status["details"]["name"] == "dup" and status["details"]["kind"] == "configmaps"
    assert 'configmaps "dup" already exists' in status["message"]


async def test_get_missing_is_not_found_with_details(kube: Kube, ns: str) -> None:
    code, body = await kube.get(f"/api/v1/namespaces/{ns}/configmaps/nope")
    status = assert_status(code, body, 404, "NotFound")
    assert status["message"] == 'configmaps "nope" not found'
    assert status["details"] == {"name": "nope", "kind": "configmaps"}


async def test_generate_name_appends_five_characters(kube: Kube, ns: str) -> None:
    names = set()
    for _ in range(5):
        code, cm = await kube.post(
            f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"generateName": "gen-"}}
        )
        assert code == 201
        name = cm["metadata"]["name"]
        assert name.startswith("gen-") and len(name) == len("gen-") + 5
        names.add(name)
    assert len(names) == 5


async def test_missing_namespace_is_not_found(kube: Kube) -> None:
    code, body = await kube.post("/api/v1/namespaces/does-not-exist-xyz/configmaps", _cm("x"))
    assert_status(code, body, 404, "NotFound")


async def test_resource_versions_increase_across_writes(kube: Kube, ns: str) -> None:
    rvs = []
    for i in range(3):
        _, cm = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm(f"rv{i}"))
        rvs.append(int(cm["metadata"]["resourceVersion"]))
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    code, listed = await kube.get(f"/api/v1/namespaces/{ns}/configmaps")
    assert code == 200 and listed["kind"] == "ConfigMapList"
    assert int(listed["metadata"]["resourceVersion"]) >= rvs[-1]


async def test_update_with_stale_resource_version_conflicts(kube: Kube, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/configmaps/u"
    _, cm = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm("u", v="1"))
    fresh = dict(cm, data={"v": "2"})
    code, updated = await kube.put(path, fresh)
    assert code == 200 and updated["data"] == {"v": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(cm["metadata"]["resourceVersion"])
    stale = dict(cm, data={"v": "3"})
    code, body = await kube.put(path, stale)
    status = assert_status(code, body, 409, "Conflict")
    assert 'Operation cannot be fulfilled on configmaps "u"' in status["message"]
    assert "the object has been modified" in status["message"]


async def test_noop_update_keeps_the_resource_version(kube: Kube, ns: str) -> None:
    _, cm = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm("same", v="1"))
    code, again = await kube.put(f"/api/v1/namespaces/{ns}/configmaps/same", cm)
    assert code == 200
    assert again["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


async def test_name_mismatch_is_bad_request(kube: Kube, ns: str) -> None:
    _, cm = await kube.post(f"/api/v1/namespaces/{ns}/configmaps", _cm("m1"))
    code, body = await kube.put(f"/api/v1/namespaces/{ns}/configmaps/other", cm)
    assert_status(code, body, 400, "BadRequest")
