"""A RayJob that uses a feature whose KubeRay feature gate is off is refused (ValidationFailed).

KubeRay validates a RayJob's ``rayClusterSpec`` with the RayCluster rules, gate checks included,
and refuses ``deletionStrategy`` while ``RayJobDeletionPolicy`` is off; no RayCluster is made.
"""

from __future__ import annotations

from typing import Any

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.config.options import OperatorOptions
from rayop.kube.resources import EVENTS
from rayop.testing import eventually

from .rayjob_env import RayJobEnv, running_rayjob_operator, small_rayjob


async def _assert_refused(env: RayJobEnv, ns: str, name: str, *, naming: str) -> None:
    status = await env.wait_for_status(ns, name, "ValidationFailed")
    assert status["reason"] == "ValidationFailed"
    assert naming in status["message"]
    await eventually(
        lambda: any(e.get("reason") == "InvalidRayJobSpec" for e in env.objects(EVENTS, ns)),
        what="InvalidRayJobSpec event",
    )
    assert env.cluster_creates(ns) == []


async def test_gated_cluster_field_and_deletion_strategy_are_refused() -> None:
    gates = FeatureGates().with_overrides({"RayJobDeletionPolicy": False})
    async with running_rayjob_operator(options=OperatorOptions(feature_gates=gates)) as env:
        networked = small_rayjob("networked")
        networked["spec"]["rayClusterSpec"]["networkPolicy"] = {"mode": "DenyAll"}
        await env.apply(networked, "networked")
        deletion: dict[str, Any] = small_rayjob(
            "deletion",
            shutdownAfterJobFinishes=True,
            deletionStrategy={
                "onSuccess": {"policy": "DeleteCluster"},
                "onFailure": {"policy": "DeleteCluster"},
            },
        )
        await env.apply(deletion, "deletion")
        await _assert_refused(env, "networked", "networked", naming="RayClusterNetworkPolicy")
        await _assert_refused(env, "deletion", "deletion", naming="RayJobDeletionPolicy")
