"""The suspend state machine: requested, suspending, suspended, resumed."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.controllers.rayservice import suspend
from rayop.kube.errors import Conflict
from rayop.kube.resources import SERVICES
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import StatusEdits, Stop

from .rayservice_fakes import NS, UID, World, cluster_of, rayservice, with_status


def _condition(status: dict[str, Any], kind: str) -> tuple[str, str]:
    for c in status.get("conditions") or []:
        if c["type"] == kind:
            return c["status"], c["reason"]
    return "", ""


def _suspending() -> dict[str, Any]:
    return with_status(
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


async def test_a_requested_suspend_resets_the_status_and_deletes_nothing_yet() -> None:
    world = World()
    service = with_status(rayservice(suspend=True), active="svc-a", numServeEndpoints=2)
    world.add_cluster(cluster_of(service, "svc-a"))
    ctx = world.context(service)
    assert suspend.phase_of(ctx) == "requested"
    stop = await suspend.handle_suspend(ctx)
    assert stop == Stop(Result(requeue_after=0.05), StatusEdits.WRITE)
    assert _condition(ctx.status, "Suspending") == ("True", "SuspendRequested")
    assert _condition(ctx.status, "Ready") == ("False", "SuspendRequested")
    assert ctx.status["activeServiceStatus"] == {} and ctx.status["numServeEndpoints"] == 0
    assert world.client.calls == []


def _owned_service(name: str, *, owner: str = UID, **meta: Any) -> dict[str, Any]:
    """A Service ``name`` controlled by the object of uid ``owner`` (the RayService: UID)."""
    ref = {"apiVersion": "ray.io/v1", "kind": "RayService", "name": "svc", "uid": owner,
           "controller": True}  # fmt: skip
    metadata = {"name": name, "namespace": NS, "uid": f"{name}-uid", "ownerReferences": [ref]}
    return {"metadata": {**metadata, **meta}}


async def test_suspending_deletes_clusters_and_services_and_waits_for_them() -> None:
    world = World()
    service = _suspending()
    world.add_cluster(cluster_of(service, "svc-a"))
    for svc in (_owned_service("svc-head-svc"), _owned_service("svc-serve-svc")):
        world.services.put(world.client.put(SERVICES, svc))
    ctx = world.context(service)
    stop = await suspend.handle_suspend(ctx)
    assert stop == Stop.discarding_status(Result(requeue_after=2.0))
    deleted = [(c.resource, c.name) for c in world.client.calls_of("delete")]
    assert deleted == [
        ("rayclusters", "svc-a"),
        ("services", "svc-head-svc"),
        ("services", "svc-serve-svc"),
    ]
    assert world.recorder.reasons() == ["DeletedRayCluster", "DeletedService", "DeletedService"]
    assert world.client.stored_all(SERVICES) == []


async def test_suspending_waits_for_the_services_too_as_kuberay_does() -> None:
    world = World()
    service = _suspending()
    world.services.put(_owned_service("svc-head-svc", deletionTimestamp="2026-01-01T00:00:00Z"))
    stop = await suspend.handle_suspend(world.context(service))
    assert stop == Stop.discarding_status(Result(requeue_after=2.0))
    assert world.client.calls_of("delete") == []  # already being deleted: not again


async def test_suspending_leaves_a_service_it_did_not_create_alone() -> None:
    world = World()
    service = _suspending()
    unowned = {"metadata": {"name": "svc-serve-svc", "namespace": NS}}
    for svc in (_owned_service("svc-head-svc", owner="someone-else"), unowned):
        world.services.put(world.client.put(SERVICES, svc))
    assert await suspend.handle_suspend(world.context(service)) == Stop.after_status_write()
    assert world.client.calls_of("delete") == []
    assert len(world.client.stored_all(SERVICES)) == 2


async def test_a_service_replaced_since_the_caches_copy_is_not_deleted() -> None:
    world = World()
    service = _suspending()
    cached = _owned_service("svc-head-svc")
    world.services.put(cached)
    world.client.put(SERVICES, {**cached, "metadata": {**cached["metadata"], "uid": "new-uid"}})
    with pytest.raises(Conflict):
        await suspend.handle_suspend(world.context(service))
    assert world.client.stored(SERVICES, NS, "svc-head-svc") is not None
    assert world.recorder.reasons() == []


async def test_suspending_completes_once_no_cluster_remains_even_if_unsuspended() -> None:
    world = World()
    service = _suspending()
    service["spec"]["suspend"] = False
    ctx = world.context(service)
    assert suspend.phase_of(ctx) == "suspending"
    assert await suspend.handle_suspend(ctx) == Stop.after_status_write()
    assert _condition(ctx.status, "Suspending") == ("False", "SuspendComplete")
    assert _condition(ctx.status, "Suspended") == ("True", "SuspendComplete")


async def test_a_suspended_service_waits_and_a_resumed_one_goes_on() -> None:
    world = World()
    suspended = with_status(
        rayservice(suspend=True),
        conditions=[
            {
                "type": "Suspended",
                "status": "True",
                "reason": "SuspendComplete",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    )
    assert await suspend.handle_suspend(world.context(suspended)) == Stop.discarding_status()
    resumed = {**suspended, "spec": {**suspended["spec"], "suspend": False}}
    ctx = world.context(resumed)
    assert suspend.phase_of(ctx) == "resumed"
    assert await suspend.handle_suspend(ctx) is None
    [write] = world.client.calls_of("update/status")
    assert _condition(write.body["status"], "Suspended") == ("False", "RayServiceResumed")
    assert _condition(write.body["status"], "Ready") == ("False", "Initializing")
    assert ctx.cached["metadata"]["resourceVersion"] != resumed["metadata"]["resourceVersion"]


async def test_no_suspend_goes_on() -> None:
    world = World()
    ctx = world.context(rayservice())
    assert suspend.phase_of(ctx) == ""
    assert await suspend.handle_suspend(ctx) is None
