"""Custom resources: status subresource, generation, schema validation, pruning, defaults (O1-O3)."""

from __future__ import annotations

from .conftest import CustomResource
from .kubehttp import Kube
from .status_shape import assert_status


async def test_create_drops_status_and_starts_at_generation_one(
    kube: Kube, gizmos: CustomResource
) -> None:
    body = gizmos.body("g", size=1)
    body["status"] = {"phase": "Lying"}
    code, obj = await kube.post(gizmos.collection, body)
    assert code == 201, obj
    assert obj["metadata"]["generation"] == 1 and "phase" not in (obj.get("status") or {})


async def test_main_and_status_writes_ignore_each_other(kube: Kube, gizmos: CustomResource) -> None:
    _, obj = await kube.post(gizmos.collection, gizmos.body("s", size=1))
    obj["status"] = {"phase": "Running", "count": 1}
    obj["spec"]["size"] = 99
    code, after_status = await kube.put(gizmos.item("s", "status"), obj)
    assert code == 200, after_status
    assert after_status["status"] == {"phase": "Running", "count": 1}
    assert after_status["spec"]["size"] == 1 and after_status["metadata"]["generation"] == 1

    after_status["spec"]["size"] = 2
    after_status["status"] = {"phase": "Ignored"}
    code, after_main = await kube.put(gizmos.item("s"), after_status)
    assert code == 200, after_main
    assert after_main["spec"]["size"] == 2 and after_main["status"]["phase"] == "Running"
    assert after_main["metadata"]["generation"] == 2

    after_main["metadata"]["labels"] = {"only": "metadata"}
    code, relabelled = await kube.put(gizmos.item("s"), after_main)
    assert code == 200 and relabelled["metadata"]["generation"] == 2


async def test_update_without_resource_version_is_invalid(
    kube: Kube, gizmos: CustomResource
) -> None:
    _, obj = await kube.post(gizmos.collection, gizmos.body("nv", size=1))
    del obj["metadata"]["resourceVersion"]
    code, body = await kube.put(gizmos.item("nv"), obj)
    status = assert_status(code, body, 422, "Invalid")
    assert "metadata.resourceVersion" in status["message"]


async def test_schema_violations_are_invalid_with_field_paths(
    kube: Kube, gizmos: CustomResource
) -> None:
    cases = [
        (gizmos.body("t1", size="big"), "spec.size"),
        (gizmos.body("t2", size=1, color="green"), "spec.color"),
        (gizmos.body("t3", color="red"), "spec.size"),
    ]
    for body, field in cases:
        code, status = await kube.post(gizmos.collection, body)
        status = assert_status(code, status, 422, "Invalid")
        assert field in status["message"], status
        assert any(field in (c.get("field") or "") for c in status["details"]["causes"]), status


async def test_unknown_fields_are_pruned_and_defaults_applied(
    kube: Kube, gizmos: CustomResource
) -> None:
    body = gizmos.body("p", size=3, bogus=True)
    body["extraTopLevel"] = 1
    code, obj = await kube.post(gizmos.collection, body)
    assert code == 201, obj
    assert obj["spec"] == {"size": 3, "color": "red"}
    assert "extraTopLevel" not in obj


async def test_strategic_merge_patch_on_custom_resources_is_unsupported(
    kube: Kube, gizmos: CustomResource
) -> None:
    await kube.post(gizmos.collection, gizmos.body("smp", size=1))
    code, body = await kube.patch(
        gizmos.item("smp"), {"spec": {"size": 2}}, "application/strategic-merge-patch+json"
    )
    assert_status(code, body, 415, "UnsupportedMediaType")
