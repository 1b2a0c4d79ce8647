"""The gate and dependent-object steps, each on a context built from fakes (kuberay-v1.md §3.1)."""

from __future__ import annotations

from typing import Any

import pytest

from rayop.api import keys
from rayop.controllers.raycluster import reconcile_steps as steps
from rayop.kube.errors import ApiError, NotFound
from rayop.kube.resources import SERVICES
from rayop.runtime.steps import StatusEdits

from ._fakes import NS, Fakes, context
from ._fixtures import minimal_cluster


def _with(cluster: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    cluster["metadata"].update(metadata)
    return cluster


# -- gates --------------------------------------------------------------------------------------


async def test_another_manager_ends_the_pass_even_when_the_spec_does_not_parse() -> None:
    cluster = minimal_cluster(managedBy="kueue.x-k8s.io/multikueue")
    del cluster["spec"]["headGroupSpec"]
    stop = await steps.check_managed_by(context(cluster))
    assert stop is not None and stop.status is StatusEdits.DISCARD
    assert stop.result.requeue_after is None
    assert await steps.check_managed_by(context(minimal_cluster())) is None


async def test_invalid_spec_gets_a_warning_and_a_status_reason_and_no_requeue() -> None:
    fakes = Fakes()
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9  # > maxReplicas 5

    stop = await steps.validate(context(cluster, fakes))

    assert stop is not None and stop.status is StatusEdits.DISCARD
    assert stop.result.requeue_after is None
    assert fakes.events.reasons() == ["InvalidRayClusterSpec"]
    (write,) = fakes.api.calls_of("update/status")
    assert write.body["status"]["reason"].startswith("InvalidRayClusterSpec: ")


async def test_unparsable_spec_is_refused_like_an_invalid_one() -> None:
    fakes = Fakes()
    cluster = minimal_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = "many"
    ctx = context(cluster, fakes)
    assert ctx.parsed is None and ctx.problems

    stop = await steps.validate(ctx)

    assert stop is not None
    assert fakes.events.reasons() == ["InvalidRayClusterSpec"]


async def test_a_reason_the_cache_cannot_take_yet_requeues_after_two_seconds() -> None:
    fakes = Fakes()
    cluster = _with(minimal_cluster(), name="Bad_Name", resourceVersion="1")
    deps = fakes.deps()
    deps.own_writes.record({"metadata": {**cluster["metadata"], "resourceVersion": "2"}})

    stop = await steps.validate(context(cluster, fakes, deps))

    assert stop is not None and stop.result.requeue_after == 2.0
    assert fakes.api.calls_of("update/status") == [], "the write could only fail with 409"
    assert fakes.events.reasons() == ["InvalidRayClusterMetadata"]


async def test_an_unchanged_reason_is_not_written_again() -> None:
    fakes = Fakes()
    cluster = _with(minimal_cluster(), name="Bad_Name")
    await steps.validate(context(cluster, fakes))
    cluster["status"] = {"reason": fakes.api.calls_of("update/status")[0].body["status"]["reason"]}
    await steps.validate(context(cluster, fakes))
    assert len(fakes.api.calls_of("update/status")) == 1


async def test_contradictory_status_raises_after_a_warning() -> None:
    fakes = Fakes()
    cluster = minimal_cluster()
    flag = {
        "status": "True",
        "reason": "r",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    cluster["status"] = {
        "conditions": [
            {"type": "RayClusterSuspending", **flag},
            {"type": "RayClusterSuspended", **flag},
        ]
    }
    with pytest.raises(steps.InvalidStatusError):
        await steps.validate(context(cluster, fakes))
    assert fakes.events.reasons() == ["InvalidRayClusterStatus"]


async def test_a_valid_cluster_goes_on_and_a_deleting_one_stops() -> None:
    assert await steps.validate(context(minimal_cluster())) is None
    assert await steps.stop_if_deleting(context(minimal_cluster())) is None
    deleting = _with(minimal_cluster(), deletionTimestamp="2026-01-01T00:00:00Z")
    stop = await steps.stop_if_deleting(context(deleting))
    assert stop is not None and stop.status is StatusEdits.DISCARD


# -- dependent objects --------------------------------------------------------------------------


async def test_autoscaler_rbac_is_created_once() -> None:
    fakes = Fakes()
    ctx = context(minimal_cluster(enableInTreeAutoscaling=True), fakes)

    assert await steps.reconcile_autoscaler_rbac(ctx) is None

    kinds = [(c.kind, c.name) for c in fakes.api.calls_of("create")]
    assert kinds == [("ServiceAccount", "rc"), ("Role", "rc"), ("RoleBinding", "rc")]
    assert fakes.events.reasons() == ["CreatedServiceAccount", "CreatedRole", "CreatedRoleBinding"]
    for kind in ("ServiceAccount", "Role", "RoleBinding"):
        fakes.informers.caches[kind].put({"metadata": {"name": "rc", "namespace": NS}})
    await steps.reconcile_autoscaler_rbac(ctx)
    assert len(fakes.api.calls_of("create")) == 3, "the caches hold them now"
    await steps.reconcile_autoscaler_rbac(context(minimal_cluster(), fakes))
    assert len(fakes.api.calls_of("create")) == 3, "no autoscaling, no RBAC"


async def test_a_missing_user_service_account_is_an_error_with_a_warning() -> None:
    fakes = Fakes()
    cluster = minimal_cluster(enableInTreeAutoscaling=True)
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "mine"
    # "mine" is on neither the cache nor the server

    with pytest.raises(NotFound):
        await steps.reconcile_autoscaler_rbac(context(cluster, fakes))

    assert fakes.events.reasons() == ["AutoscalerServiceAccountNotFound"]
    assert fakes.api.calls_of("create") == []


async def test_auth_secret_only_for_generated_tokens() -> None:
    fakes = Fakes()
    await steps.reconcile_auth_secret(
        context(minimal_cluster(authOptions={"mode": "token"}), fakes)
    )
    (call,) = fakes.api.calls_of("create", "Secret")
    assert call.name == "rc" and set(call.body["data"]) == {"auth_token"}
    for options in (
        {"mode": "token", "secretName": "s"},
        {"mode": "token", "enableK8sTokenAuth": True},
    ):
        await steps.reconcile_auth_secret(context(minimal_cluster(authOptions=options), fakes))
    assert len(fakes.api.calls_of("create")) == 1


async def test_head_service_create_answered_already_exists_counts_as_done() -> None:
    fakes = Fakes()
    fakes.api.put(SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": NS}})  # not cached
    await steps.reconcile_head_service(context(minimal_cluster(), fakes))
    assert [c.name for c in fakes.api.calls_of("create", "Service")] == ["rc-head-svc"]
    assert fakes.events.reasons() == [], "the cache only lagged"


async def test_failed_service_create_is_raised_with_a_warning() -> None:
    fakes = Fakes()
    fakes.api.fail_every("create", ApiError({"code": 500, "message": "boom"}), kind="Service")
    with pytest.raises(ApiError):
        await steps.reconcile_head_service(context(minimal_cluster(), fakes))
    assert fakes.events.reasons() == ["FailedToCreateService"]


async def test_two_head_services_are_an_error() -> None:
    fakes = Fakes()
    selector = {
        keys.RAY_CLUSTER: "rc",
        keys.RAY_NODE_TYPE: "head",
        keys.RAY_IDENTIFIER: "rc-head",
    }
    for name in ("a", "b"):
        fakes.services.put({"metadata": {"name": name, "labels": selector}})
    with pytest.raises(RuntimeError, match="2 head services"):
        await steps.reconcile_head_service(context(minimal_cluster(), fakes))


async def test_headless_and_serve_services_follow_the_spec() -> None:
    fakes = Fakes()
    cluster = minimal_cluster()
    await steps.reconcile_headless_worker_service(context(cluster, fakes))
    await steps.reconcile_serve_service(context(cluster, fakes))
    assert fakes.api.calls == []
    cluster["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 2
    cluster["metadata"]["annotations"] = {keys.ENABLE_SERVE_SERVICE: "true"}
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [{"name": "serve", "containerPort": 8000}]
    await steps.reconcile_headless_worker_service(context(cluster, fakes))
    await steps.reconcile_serve_service(context(cluster, fakes))
    assert [c.name for c in fakes.api.calls_of("create")] == ["rc-headless", "rc-serve-svc"]
