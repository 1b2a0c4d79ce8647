"""The events KubeRay v1.7's RayService controller records, at the same points, with its words."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.controllers.rayservice import head_label, opening_steps, services, suspend
from rayop.kube.errors import Forbidden

from .rayservice_fakes import NS, UID, World, cluster_of, rayservice, with_status

DENIED = Forbidden({"code": 403, "message": "denied"})


def _selecting(name: str, cluster: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "3"},
        "spec": {"selector": {"ray.io/cluster": cluster}, "ports": [{"name": "serve"}]},
    }


async def test_head_pod_serve_label_updates_and_failures() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.client.fail_next("patch", DENIED)
    with pytest.raises(Forbidden):
        await head_label.update_head_serve_labels(world.context(service))
    await head_label.update_head_serve_labels(world.context(service))
    assert world.events() == [
        (
            "Warning",
            "FailedToUpdateHeadPodServeLabel",
            'Failed to update the serve label to "true" for the Head Pod ns/svc-a-head: denied',
        ),
        (
            "Normal",
            "UpdatedHeadPodServeLabel",
            'Updated the serve label to "true" for the Head Pod ns/svc-a-head',
        ),
    ]
    assert world.actions() == ["Update", "Update"]


async def test_a_failed_service_update_is_failed_to_update_service() -> None:
    service = with_status(rayservice(), active="svc-a", pending="svc-b")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    world.add_cluster(cluster_of(service, "svc-b"))
    world.services.put(_selecting("svc-head-svc", "svc-a"), _selecting("svc-serve-svc", "svc-a"))
    ctx = world.context(service)
    ctx.ready_clusters.update({"svc-a", "svc-b"})
    world.client.fail_next("update", DENIED)
    with pytest.raises(Forbidden):
        await services.reconcile_services(ctx)
    assert world.events() == [
        ("Warning", "FailedToUpdateService", "Failed to update the service ns/svc-head-svc, denied")
    ]
    await services.reconcile_services(ctx)
    assert world.events()[1:] == [
        ("Normal", "UpdatedService", "Updated the service ns/svc-head-svc"),
        ("Normal", "UpdatedService", "Updated the service ns/svc-serve-svc"),
    ]


async def test_a_failed_create_is_failed_to_create_service() -> None:
    service = with_status(rayservice(), active="svc-a")
    world = World()
    world.add_cluster(cluster_of(service, "svc-a"))
    ctx = world.context(service)
    ctx.ready_clusters.add("svc-a")
    world.client.fail_next("create", DENIED)
    with pytest.raises(Forbidden):
        await services.reconcile_services(ctx)
    assert world.events() == [
        ("Warning", "FailedToCreateService", "Failed to create the service ns/svc-head-svc, denied")
    ]


async def test_a_failed_delete_during_suspend_is_failed_to_delete_service() -> None:
    service = with_status(
        rayservice(suspend=True),
        conditions=[
            {
                "type": "Suspending",
                "status": "True",
                "reason": "SuspendRequested",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    )
    world = World()
    owner = {"apiVersion": "ray.io/v1", "kind": "RayService", "name": "svc", "uid": UID,
             "controller": True}  # fmt: skip
    head_svc = {"metadata": {"name": "svc-head-svc", "namespace": NS, "ownerReferences": [owner]}}
    world.services.put(head_svc)
    world.client.fail_next("delete", DENIED)
    with pytest.raises(Forbidden):
        await suspend.handle_suspend(world.context(service))
    await suspend.handle_suspend(world.context(service))
    assert world.events() == [
        (
            "Warning",
            "FailedToDeleteService",
            "Failed to delete the Service ns/svc-head-svc during suspend: denied",
        ),
        ("Normal", "DeletedService", "Deleted the Service ns/svc-head-svc during suspend"),
    ]


async def test_invalid_metadata_is_invalid_rayservice_metadata() -> None:
    service = rayservice()
    service["metadata"]["annotations"] = {"ray.io/initializing-timeout": "soon"}
    world = World()
    ctx = world.context(service)
    stop = await opening_steps.validate(ctx)
    assert stop is not None
    message = (
        "The RayService metadata is invalid: RayService annotations is invalid: annotation "
        "ray.io/initializing-timeout has invalid format: soon. Expected Go duration format "
        "(e.g., '5m', '1h') or positive integer seconds"
    )
    assert world.events() == [("Warning", "InvalidRayServiceMetadata", f"ns/svc: {message}")]
    assert world.actions() == ["Validate"]
    ready = next(c for c in ctx.status["conditions"] if c["type"] == "Ready")
    assert (ready["reason"], ready["message"]) == ("ValidationFailed", message)
