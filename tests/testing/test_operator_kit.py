"""open_control_plane + open_operator: a KubeRay sample RayCluster becomes ready, and the
operator stops cleanly; the pytest plugin's fixtures do the same."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from rayop.kube.resources import RAY_CLUSTERS, RAY_JOBS
from rayop.runtime.reconcile import ReconcileFunc, Request, Result
from rayop.testing import (
    ALL_KINDS,
    FakeClock,
    PlaneUnderTest,
    RunningOperator,
    eventually,
    open_control_plane,
    open_operator,
)

SAMPLE = """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-kuberay
spec:
  rayVersion: '2.46.0'
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
  workerGroupSpecs:
  - replicas: 1
    minReplicas: 1
    maxReplicas: 5
    groupName: workergroup
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
"""


def sample() -> dict[str, Any]:
    doc = yaml.safe_load(SAMPLE)
    assert isinstance(doc, dict)
    return doc


async def test_a_sample_raycluster_becomes_ready() -> None:
    async with open_control_plane() as plane, open_operator(plane) as running:
        assert running.manager.is_ready()
        assert set(running.controllers) == {"RayCluster"}
        await plane.create(RAY_CLUSTERS, sample(), "kit")
        await eventually(
            lambda: plane.raycluster_converged("kit", "raycluster-kuberay"),
            timeout=30,
            what="the sample RayCluster ready",
        )
        assert len(plane.ray_pods("kit", "raycluster-kuberay")) == 2
        assert plane.events("kit", "CreatedService"), "the operator's Events are readable"


async def test_controllers_and_gates_are_chosen_and_the_operator_restarts() -> None:
    async with open_control_plane() as plane:
        async with open_operator(
            plane, controllers=ALL_KINDS, feature_gates={"RayJobDeletionPolicy": False}
        ) as first:
            assert set(first.controllers) == set(ALL_KINDS)
            assert not first.options.feature_gates.ray_job_deletion_policy
        async with open_operator(plane, controllers=["RayJob"], concurrency=1) as second:
            assert list(second.controllers) == ["RayJob"]
            assert second.controller("RayJob").max_concurrent_reconciles == 1
            listed = await plane.client.list(RAY_JOBS, namespace="default")
            assert listed["items"] == []


async def test_wrap_reconcile_sees_every_reconcile() -> None:
    seen: list[Request] = []

    def wrap(reconcile: ReconcileFunc) -> ReconcileFunc:
        async def observed(request: Request) -> Result:
            seen.append(request)
            return await reconcile(request)

        return observed

    async with open_control_plane() as plane, open_operator(plane, wrap_reconcile=wrap):
        await plane.create(RAY_CLUSTERS, sample(), "wrapped")
        await eventually(lambda: Request("wrapped", "raycluster-kuberay") in seen, timeout=10)


async def test_unknown_controllers_are_refused() -> None:
    async with open_control_plane(crds=False) as plane:
        with pytest.raises(ValueError, match="RayWidget"):
            async with open_operator(plane, controllers=["RayWidget"]):  # type: ignore[list-item]
                pass


def test_plugin_fake_clock(fake_clock: FakeClock) -> None:
    assert fake_clock.now() == 1000.0 and not fake_clock.autojump


@pytest.mark.rayop_operator(concurrency=1)
async def test_plugin_fixtures(
    control_plane: PlaneUnderTest, ray_operator: RunningOperator
) -> None:
    assert ray_operator.controller("RayCluster").max_concurrent_reconciles == 1
    await control_plane.create(RAY_CLUSTERS, sample(), "plugin")
    await eventually(
        lambda: control_plane.raycluster_converged("plugin", "raycluster-kuberay"), timeout=30
    )
