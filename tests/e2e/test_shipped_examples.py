"""The manifests ``rayop samples`` ships run as they are: each reaches its goal on the plane."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from rayop.examples import SAMPLES, sample_text
from rayop.kube.resource import Resource
from rayop.kube.resources import CONFIGMAPS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES
from rayop.testing import ALL_KINDS, PlaneUnderTest, eventually, open_control_plane, open_operator

pytestmark = pytest.mark.timeout(90)

BY_KIND = {r.kind: r for r in (CONFIGMAPS, RAY_CLUSTERS, RAY_JOBS, RAY_SERVICES)}


async def _apply(plane: PlaneUnderTest, name: str, namespace: str) -> list[dict[str, Any]]:
    await plane.namespace(namespace)
    docs = [d for d in yaml.safe_load_all(sample_text(name)) if d]
    for doc in docs:
        resource: Resource = BY_KIND[doc["kind"]]
        await plane.create(resource, doc, namespace)
    return docs


def _status(plane: PlaneUnderTest, resource: Resource, ns: str, name: str) -> dict[str, Any]:
    obj = plane.stored(resource, ns, name) or {}
    return dict(obj.get("status") or {})


def test_every_sample_is_listed_once_and_parses() -> None:
    assert [s.name for s in SAMPLES] == ["raycluster", "rayjob", "rayservice"]
    kinds = {s.name: [d["kind"] for d in yaml.safe_load_all(sample_text(s.name))] for s in SAMPLES}
    assert kinds == {
        "raycluster": ["RayCluster"],
        "rayjob": ["ConfigMap", "RayJob"],
        "rayservice": ["ConfigMap", "RayService"],
    }


async def test_the_samples_reach_ready_succeeded_and_serving() -> None:
    async with open_control_plane() as plane, open_operator(plane, controllers=ALL_KINDS):
        await _apply(plane, "raycluster", "ex-cluster")
        await _apply(plane, "rayjob", "ex-job")
        await _apply(plane, "rayservice", "ex-service")
        await eventually(
            lambda: plane.raycluster_converged("ex-cluster", "raycluster-sample"),
            timeout=30, what="raycluster-sample ready",
        )  # fmt: skip
        assert len(plane.ray_pods("ex-cluster", "raycluster-sample")) == 2

        def job_done() -> bool:
            status = _status(plane, RAY_JOBS, "ex-job", "rayjob-sample")
            return status.get("jobDeploymentStatus") == "Complete"

        await eventually(job_done, timeout=40, what="rayjob-sample Complete")
        assert _status(plane, RAY_JOBS, "ex-job", "rayjob-sample")["jobStatus"] == "SUCCEEDED"

        def service_ready() -> bool:
            status = _status(plane, RAY_SERVICES, "ex-service", "rayservice-sample")
            return any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or []
            )

        await eventually(service_ready, timeout=40, what="rayservice-sample Ready")
        active = _status(plane, RAY_SERVICES, "ex-service", "rayservice-sample")
        apps = active["activeServiceStatus"]["applicationStatuses"]
        assert apps["greeter"]["status"] == "RUNNING"
